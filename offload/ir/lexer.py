"""Lexing for the IR text parser: one line -> tokens with a cursor, literals, name hints."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from offload.ir.core import ConstArray
from offload.ir.types import ArrayType, ScalarType, Type, parse_type


class IRParseError(ValueError):
    """The text is not valid IR; the message names the line."""

    def __init__(self, line: int, message: str, text: str = "") -> None:
        self.line = line
        self.reason = message
        where = f"line {line}: {message}"
        super().__init__(f"{where}\n    {text.strip()}" if text.strip() else where)


_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<arrow>->)
  | (?P<type>(?:array|local)<[^<>]*>)
  | (?P<value>%[^\s,(){}:=#"]+)
  | (?P<block>\^[^\s,(){}:=#"]+)
  | (?P<func>@[^\s,(){}:=#"]+|@"[^"]*")
  | (?P<string>"[^"]*")
  | (?P<word>[\w.+\-]+)
  | (?P<punct>[(){},:=])
  | (?P<comment>\#.*)
    """,
    re.VERBOSE,
)


@dataclass
class Tokens:
    """The tokens of one line with a cursor; errors carry the line."""

    items: list[tuple[str, str]]
    lineno: int
    text: str
    pos: int = 0

    def error(self, message: str) -> IRParseError:
        return IRParseError(self.lineno, message, self.text)

    def peek(self) -> tuple[str, str] | None:
        return self.items[self.pos] if self.pos < len(self.items) else None

    def at(self, text: str) -> bool:
        tok = self.peek()
        return tok is not None and tok[1] == text

    def next(self, kind: str | None = None, what: str = "") -> str:
        tok = self.peek()
        if tok is None:
            raise self.error(f"expected {what or kind or 'more'} at the end of the line")
        if kind is not None and tok[0] != kind:
            raise self.error(f"expected {what or kind}, found {tok[1]!r}")
        self.pos += 1
        return tok[1]

    def expect(self, text: str) -> None:
        tok = self.peek()
        if tok is None or tok[1] != text:
            found = repr(tok[1]) if tok is not None else "the end of the line"
            raise self.error(f"expected {text!r}, found {found}")
        self.pos += 1

    def done(self) -> bool:
        return self.pos >= len(self.items)

    def end(self) -> None:
        if not self.done():
            raise self.error(f"unexpected {self.items[self.pos][1]!r}")


def tokenize(text: str, lineno: int) -> Tokens:
    items: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise IRParseError(lineno, f"unexpected character {text[pos]!r}", text)
        kind = m.lastgroup
        assert kind is not None
        if kind == "comment":
            break
        if kind != "ws":
            items.append((kind, m.group()))
        pos = m.end()
    return Tokens(items, lineno, text)


def _hint(name: str, prefix_re: str) -> str | None:
    """The hint of ``%hint.N`` / ``^hint.N``; ``None`` for ``%N`` / ``^bbN``."""
    body = name[1:]
    m = re.fullmatch(r"(.+)\.(\d+)", body)
    if m is not None:
        return m.group(1)
    if re.fullmatch(prefix_re, body):
        return None
    # Hand-written text may use any name; keep it as the hint.
    return body


def value_hint(name: str) -> str | None:
    return _hint(name, r"\d+")


def block_hint(name: str) -> str | None:
    return _hint(name, r"bb\d+")


def read_type(toks: Tokens) -> Type:
    tok = toks.peek()
    if tok is None or tok[0] not in ("type", "word"):
        raise toks.error("expected a type")
    toks.pos += 1
    try:
        return parse_type(tok[1])
    except (KeyError, ValueError):
        raise toks.error(f"unknown type {tok[1]!r}") from None


def read_const(toks: Tokens, t: Type) -> ConstArray | None:
    """A capture's constant contents, ``= const(5x5) "<hex>"``, if the line has them next."""
    if not toks.at("="):
        return None
    toks.expect("=")
    toks.expect("const")
    toks.expect("(")
    dims = toks.next("word", "the constant's shape, e.g. 5x5")
    toks.expect(")")
    data = toks.next("string", "the constant's bytes in hex")[1:-1]
    if not isinstance(t, ArrayType):
        raise toks.error(f"only an array capture can hold constant contents, not {t}")
    try:
        shape = tuple(int(d) for d in dims.split("x")) if dims else ()
        raw = bytes.fromhex(data)
    except ValueError:
        raise toks.error(f"bad constant shape {dims!r} or bytes") from None
    if len(shape) != t.ndim or len(raw) != t.elem.dtype.itemsize * math.prod(shape):
        raise toks.error(f"constant of shape {dims} and {len(raw)} bytes does not fit {t}")
    return ConstArray(shape, t.elem.dtype, raw)


def scalar_type(toks: Tokens) -> ScalarType:
    t = read_type(toks)
    if not isinstance(t, ScalarType):
        raise toks.error(f"expected a scalar type, found {t}")
    return t


def literal(text: str) -> bool | int | float | None:
    """A printed constant (``true``, ``-3``, ``1.5``, ``nan``, ``-inf``), or ``None``."""
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if text in ("nan", "inf", "-inf", "+inf") or re.fullmatch(
        r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", text
    ):
        return float(text)
    return None
