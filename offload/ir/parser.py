"""Read the canonical IR text of ``printer.py`` back into a ``Function``.

``print_function(parse_function(print_function(f))) == print_function(f)`` for every
function ``f``. Values and blocks may be used before the line that defines them (a block
listed before the block that dominates it), so parsing is two passes: the first creates
every block and every defined value (the type is on the defining line), the second
resolves the names used by ops and terminators.

Hints are recovered from names: ``%x.3`` has hint ``x``, ``%3`` none; ``^loop.2`` has hint
``loop``, ``^bb2`` none. The numbers themselves are not semantic. Trailing ``# ...``
comments (the printer's ``with_locs`` spans) are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from offload.ir.core import Block, Branch, Capture, Function, Jump, Op, Return, Terminator, Value
from offload.ir.lexer import (
    IRParseError,
    Tokens,
    block_hint,
    literal,
    read_const,
    read_type,
    scalar_type,
    tokenize,
    value_hint,
)
from offload.ir.ops import Opcode
from offload.ir.types import INDEX, ScalarType, Type

_OPCODES = {op.value: op for op in Opcode}


def _const_value(toks: Tokens, text: str, t: ScalarType) -> bool | int | float:
    value = literal(text)
    if value is None:
        raise toks.error(f"bad constant {text!r}")
    if t.is_bool:
        if not isinstance(value, bool):
            raise toks.error(f"constant of type bool must be true or false, found {text!r}")
        return value
    if t.is_int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise toks.error(f"constant of type {t} must be an integer, found {text!r}")
        return value
    if isinstance(value, bool):
        raise toks.error(f"constant of type {t} must be a number, found {text!r}")
    return float(value)


@dataclass
class _PendingOp:
    op: Op
    operand_names: list[str]
    toks: Tokens


@dataclass
class _PendingTerm:
    block: Block
    kind: str
    names: list[str] = field(default_factory=list[str])
    targets: list[tuple[str, list[str]]] = field(default_factory=list[tuple[str, list[str]]])
    toks: Tokens | None = None
    uniform: bool = False
    """A ``condbr ... uniform`` (``Branch.uniform``)."""


class _Parser:
    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.values: dict[str, Value] = {}
        self.blocks: dict[str, Block] = {}
        self.block_order: list[Block] = []
        self.pending_ops: list[_PendingOp] = []
        self.pending_terms: list[_PendingTerm] = []
        self.params: list[Value] = []

    def define(self, toks: Tokens, name: str, t: Type) -> Value:
        if name in self.values:
            raise toks.error(f"value {name} is defined twice")
        v = Value(t, value_hint(name))
        self.values[name] = v
        return v

    def parse(self) -> Function:
        lines = [tokenize(line, k + 1) for k, line in enumerate(self.lines)]
        lines = [t for t in lines if not t.done()]
        if not lines:
            raise IRParseError(1, "empty text: expected 'func @name(...) -> (...) {'")
        fn = self.header(lines[0])
        if not lines[-1].at("}") or len(lines[-1].items) != 1:
            raise lines[-1].error("expected '}' closing the function on the last line")
        body = lines[1:-1]
        # Pass 1: blocks, defined values, raw ops and terminators.
        current: Block | None = None
        for toks in body:
            kind, text = toks.items[0]
            if kind == "block":
                if current is not None and current.terminator is None:
                    raise toks.error(f"block before {text} has no terminator")
                current = self.label(toks, fn)
            elif current is None:
                raise toks.error("expected a block label such as '^entry.0:'")
            elif current.terminator is not None:
                raise toks.error("nothing may follow a block's terminator")
            elif kind == "value":
                self.op_line(toks, current)
            else:
                self.term_line(toks, current)
        if current is None:
            raise lines[-1].error("the function has no blocks")
        if current.terminator is None:
            raise lines[-1].error("the last block has no terminator")
        fn.blocks = self.block_order
        fn.blocks[0].args = self.params
        # Pass 2: resolve names.
        for p in self.pending_ops:
            p.op.operands = [self.use(p.toks, n) for n in p.operand_names]
        for t in self.pending_terms:
            self.resolve_term(t)
        return fn

    def header(self, toks: Tokens) -> Function:
        toks.expect("func")
        name = toks.next("func", "'@name'")[1:]
        if name.startswith('"'):
            name = name[1:-1]
        toks.expect("(")
        params: list[Value] = []
        captures: list[Capture] = []
        n_index = 0
        while not toks.at(")"):
            if params:
                toks.expect(",")
            kw = toks.next("word", "'index' or 'capture'")
            if kw == "index":
                if captures:
                    raise toks.error("index parameters must come before captures")
                n_index += 1
                cap_name = None
            elif kw == "capture":
                cap_name = toks.next("string", "a quoted capture name")[1:-1]
            else:
                raise toks.error(f"expected 'index' or 'capture', found {kw!r}")
            vname = toks.next("value", "a parameter name")
            toks.expect(":")
            t = read_type(toks)
            if cap_name is None and t != INDEX:
                raise toks.error(f"index parameter {vname} must have type {INDEX}, found {t}")
            params.append(self.define(toks, vname, t))
            if cap_name is not None:
                captures.append(Capture(cap_name, t, read_const(toks, t)))
        toks.expect(")")
        toks.expect("->")
        toks.expect("(")
        results: list[ScalarType] = []
        while not toks.at(")"):
            if results:
                toks.expect(",")
            results.append(scalar_type(toks))
        toks.expect(")")
        blocking: list[int] = []
        if toks.at("blocking"):
            toks.next()
            toks.expect("(")
            while not toks.at(")"):
                if blocking:
                    toks.expect(",")
                factor = literal(toks.next("word", "a blocking factor"))
                if not isinstance(factor, int) or isinstance(factor, bool) or factor < 1:
                    raise toks.error("a blocking factor is an int >= 1")
                blocking.append(factor)
            toks.expect(")")
        toks.expect("{")
        toks.end()
        self.params = params
        return Function(name, [], n_index, captures, results, blocking=tuple(blocking))

    def label(self, toks: Tokens, fn: Function) -> Block:
        name = toks.next("block")
        if name in self.blocks:
            raise toks.error(f"block {name} is defined twice")
        block = Block(hint=block_hint(name))
        self.blocks[name] = block
        self.block_order.append(block)
        if toks.at("("):
            if len(self.block_order) == 1:
                raise toks.error(
                    "the entry block's arguments are the function parameters; "
                    "write them in the 'func' line"
                )
            toks.expect("(")
            while not toks.at(")"):
                if block.args:
                    toks.expect(",")
                vname = toks.next("value", "a block argument")
                toks.expect(":")
                block.args.append(self.define(toks, vname, read_type(toks)))
            toks.expect(")")
        toks.expect(":")
        toks.end()
        return block

    def op_line(self, toks: Tokens, block: Block) -> None:
        rname = toks.next("value")
        toks.expect("=")
        opname = toks.next("word", "an opcode")
        opcode = _OPCODES.get(opname)
        if opcode is None:
            raise toks.error(f"unknown opcode {opname!r}")
        attrs: dict[str, Any] = {}
        operands: list[str] = []
        const_text = ""
        if opcode is Opcode.CONST:
            const_text = toks.next("word", "a constant")
        else:
            while (tok := toks.peek()) is not None and tok[0] == "value":
                operands.append(toks.next("value"))
                if not toks.at(","):
                    break
                toks.expect(",")
            if toks.at("{"):
                attrs = self.attrs(toks)
        toks.expect(":")
        t = read_type(toks)
        toks.end()
        if opcode is Opcode.CONST:
            if not isinstance(t, ScalarType):
                raise toks.error("a constant must have a scalar type")
            attrs["value"] = _const_value(toks, const_text, t)
        op = Op(opcode, [], self.define(toks, rname, t), attrs)
        block.ops.append(op)
        self.pending_ops.append(_PendingOp(op, operands, toks))

    @staticmethod
    def attrs(toks: Tokens) -> dict[str, Any]:
        toks.expect("{")
        attrs: dict[str, Any] = {}
        while not toks.at("}"):
            if attrs:
                toks.expect(",")
            key = toks.next("word", "an attribute name")
            toks.expect("=")
            text = toks.next(None, "an attribute value")
            if key in attrs:
                raise toks.error(f"attribute {key!r} given twice")
            lit = literal(text)
            attrs[key] = text if lit is None else lit
        toks.expect("}")
        return attrs

    def term_line(self, toks: Tokens, block: Block) -> None:
        kw = toks.next("word", "an op or a terminator")
        pending = _PendingTerm(block, kw, toks=toks)
        if kw == "return":
            while not toks.done():
                if pending.names:
                    toks.expect(",")
                pending.names.append(toks.next("value", "a returned value"))
        elif kw == "br":
            pending.targets.append(self.target(toks))
        elif kw == "condbr":
            pending.names.append(toks.next("value", "a condition"))
            toks.expect(",")
            pending.targets.append(self.target(toks))
            toks.expect(",")
            pending.targets.append(self.target(toks))
            if not toks.done():
                word = toks.next("word", "'uniform' or the end of the line")
                if word != "uniform":
                    raise toks.error(f"expected 'uniform' or the end of the line, found {word!r}")
                pending.uniform = True
        else:
            raise toks.error(f"expected an op or a terminator (br, condbr, return), found {kw!r}")
        toks.end()
        # A placeholder marks the block terminated; pass 2 builds the real terminator.
        block.terminator = Return([])
        self.pending_terms.append(pending)

    @staticmethod
    def target(toks: Tokens) -> tuple[str, list[str]]:
        name = toks.next("block", "a block name")
        args: list[str] = []
        if toks.at("("):
            toks.expect("(")
            while not toks.at(")"):
                if args:
                    toks.expect(",")
                args.append(toks.next("value", "a block argument"))
            toks.expect(")")
        return name, args

    def use(self, toks: Tokens, name: str) -> Value:
        v = self.values.get(name)
        if v is None:
            raise toks.error(f"use of undefined value {name}")
        return v

    def resolve_term(self, p: _PendingTerm) -> None:
        toks = p.toks
        assert toks is not None
        targets: list[tuple[Block, list[Value]]] = []
        for name, args in p.targets:
            block = self.blocks.get(name)
            if block is None:
                raise toks.error(f"branch to undefined block {name}")
            targets.append((block, [self.use(toks, a) for a in args]))
        values = [self.use(toks, n) for n in p.names]
        term: Terminator
        if p.kind == "return":
            term = Return(values)
        elif p.kind == "br":
            term = Jump(targets[0][0], targets[0][1])
        else:
            (t_block, t_args), (e_block, e_args) = targets
            term = Branch(values[0], t_block, t_args, e_block, e_args, uniform=p.uniform)
        p.block.terminator = term


__all__ = ["IRParseError", "parse_function"]


def parse_function(text: str) -> Function:
    """Parse the canonical text of one function (``printer.print_function``).

    Raises ``IRParseError`` (a ``ValueError``) naming the line of the first error. The
    result is not verified: call ``verifier.verify`` for the semantic checks. A text of two
    ``func``s is a function with its prologue (``Function.prologue``), the prologue first.
    """
    lines = text.splitlines(keepends=True)
    starts = [k for k, line in enumerate(lines) if line.startswith("func ")]
    if len(starts) != 2:
        return _Parser(text).parse()
    head = "".join(lines[: starts[1]])
    # The second function's line numbers stay those of the whole text (blank lines first).
    tail = "\n" * starts[1] + "".join(lines[starts[1] :])
    main = _Parser(tail).parse()
    main.prologue = _Parser(head).parse()
    return main
