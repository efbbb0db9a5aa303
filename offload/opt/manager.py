"""The one pass manager: registries of passes, pipelines as text, and running them.

Every pass -- the common optimiser's and each target's own -- is one class in its own
module with a ``name``, options as frozen dataclass fields, a ``from_options`` factory and
``run(fn) -> fn`` that never mutates the function it is handed. A target declares its
pipeline as text over a registry (``offload.opt.registry.COMMON`` plus its own passes), and
this module runs it: it skips disabled passes, verifies after each pass when asked, and
hands every result to a trace (``print_after``, ``ol.explain``). Grammar::

    pipeline    := item ("," item)*
    item        := NAME ["{" arg ("," arg)* "}"]          # a pass, with field overrides
                 | "first(" pipeline ("|" pipeline)* ")"   # the first alternative that applies
    arg         := FIELD "=" VALUE                         # int, bool (0/1) or "8x8" tuple

A pass may define ``applied(fn) -> bool`` (did its result change what it promises: a tile
staged, a function blocked) and a classmethod ``enabled(options) -> bool`` (e.g. not with
bounds checks). ``first(a,b | c)`` runs ``a,b`` and keeps its result where every pass of it
that has ``applied`` says so, else tries ``c``, else leaves the function as it was. A
disabled pass is left out of an alternative, unless it has ``applied``: then the
alternative is not tried (it could not apply). Only the alternative kept is traced.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from offload.ir.core import Function
from offload.ir.printer import print_function
from offload.ir.verifier import IRVerificationError, verify
from offload.opt.registry import COMMON, DEFAULT_PIPELINE
from offload.options import CompileOptions


class Pass(Protocol):
    """One pass: a ``name`` and ``run(fn) -> fn`` (never mutates IR it was not handed)."""

    name: ClassVar[str]

    def run(self, fn: Function) -> Function: ...


Registry = Mapping[str, Any]
"""Pass name -> pass class: a ``FunctionPass`` subclass (``offload.opt.base``)."""


class UnknownPassError(ValueError):
    """A pipeline names a pass its registry does not have, or is malformed."""


Trace = Callable[[str, Function], None]
"""Sees ``(step, fn)`` after each pass that ran: ``step`` is the pass with its arguments."""


@dataclass(frozen=True)
class Step:
    """One pass of a pipeline, with the field overrides written after its name."""

    name: str
    args: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        if not self.args:
            return self.name
        return f"{self.name}{{{','.join(f'{k}={v}' for k, v in self.args)}}}"


@dataclass(frozen=True)
class First:
    """Alternatives tried in order; the first that applies is kept (see the module doc)."""

    alternatives: tuple[Pipeline, ...]

    def __str__(self) -> str:
        return f"first({' | '.join(_text(a) for a in self.alternatives)})"


Item = Step | First
Pipeline = tuple[Item, ...]


def _text(items: Pipeline) -> str:
    return ",".join(str(i) for i in items)


_TOKEN = re.compile(r"\s*(first\(|[A-Za-z_][A-Za-z0-9_]*|\{[^}]*\}|[,|()])")


def parse_pipeline(text: str, registry: Registry | None = None) -> Pipeline:
    """The pipeline ``text`` describes; names must be in ``registry`` (default: the common
    optimiser's), else ``UnknownPassError`` listing the known ones."""
    reg = COMMON if registry is None else registry
    tokens = _tokens(text)
    items, pos = _parse_items(tokens, 0, text, reg)
    if pos != len(tokens):
        raise UnknownPassError(f"unexpected {tokens[pos]!r} in pipeline {text!r}")
    return items


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None:
            raise UnknownPassError(f"cannot read pipeline {text!r} at column {pos}")
        tokens.append(m.group(1))
        pos = m.end()
    return tokens


def _parse_items(tokens: list[str], pos: int, text: str, reg: Registry) -> tuple[Pipeline, int]:
    items: list[Item] = []
    while pos < len(tokens) and tokens[pos] not in ("|", ")"):
        tok = tokens[pos]
        if tok == ",":
            pos += 1
            continue
        if tok == "first(":
            alts: list[Pipeline] = []
            pos += 1
            while True:
                alt, pos = _parse_items(tokens, pos, text, reg)
                alts.append(alt)
                if pos >= len(tokens):
                    raise UnknownPassError(f"unclosed 'first(' in pipeline {text!r}")
                pos += 1
                if tokens[pos - 1] == ")":
                    break
            items.append(First(tuple(alts)))
            continue
        if tok not in reg:
            known = ", ".join(sorted(reg))
            raise UnknownPassError(f"unknown pass {tok!r} in pipeline {text!r} (known: {known})")
        pos += 1
        args: tuple[tuple[str, str], ...] = ()
        if pos < len(tokens) and tokens[pos].startswith("{"):
            args = _args(tokens[pos], reg[tok], text)
            pos += 1
        items.append(Step(tok, args))
    return tuple(items), pos


def _args(token: str, cls: Any, text: str) -> tuple[tuple[str, str], ...]:
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    out: list[tuple[str, str]] = []
    for part in filter(None, (p.strip() for p in token[1:-1].split(","))):
        key, eq, value = part.partition("=")
        if not eq or key.strip() not in fields:
            raise UnknownPassError(
                f"pass {cls.name!r} has no option {key.strip()!r} in pipeline {text!r} "
                f"(options: {', '.join(sorted(fields)) or 'none'})"
            )
        out.append((key.strip(), value.strip()))
    return tuple(out)


def _value(current: object, text: str) -> object:
    """``text`` as a value of ``current``'s type (the field's default)."""
    if isinstance(current, bool):
        return text not in ("0", "false", "False")
    if isinstance(current, int):
        return int(text)
    if isinstance(current, tuple):
        return tuple(int(x) for x in text.split("x"))
    return text


Overrides = Mapping[str, Mapping[str, object]]
"""Pass name -> field values a target sets on every instance of that pass (the GPU's tile
size, a kernel variant's index width); a step's own ``{...}`` arguments come after."""


def make_pass(
    step: Step, registry: Registry, options: CompileOptions, overrides: Overrides | None = None
) -> Pass:
    """The pass object of ``step``: ``from_options``, then ``overrides`` for its name, then
    the step's own arguments."""
    p: Any = registry[step.name].from_options(options)
    if overrides and step.name in overrides:
        p = dataclasses.replace(p, **overrides[step.name])
    if step.args:
        p = dataclasses.replace(p, **{k: _value(getattr(p, k), v) for k, v in step.args})
    made: Pass = p
    return made


def _required(step: Step, registry: Registry) -> bool:
    """Whether ``step``'s pass has an ``applied`` test: an alternative without it is moot."""
    return hasattr(registry[step.name], "applied")


def _skipped(step: Step, registry: Registry, options: CompileOptions) -> bool:
    if step.name in options.disabled_passes:
        return True
    enabled = getattr(registry[step.name], "enabled", None)
    return enabled is not None and not enabled(options)


def run_pipeline(
    fn: Function,
    options: CompileOptions,
    trace: Trace | None = None,
    *,
    pipeline: str | Pipeline | None = None,
    registry: Registry | None = None,
    overrides: Overrides | None = None,
) -> Function:
    """Run ``pipeline`` (default: ``options.pipeline``, else the common ``DEFAULT_PIPELINE``)
    over ``fn`` with the passes of ``registry`` (default: the common optimiser's).

    Disabled passes (``options.disabled_passes``, or a pass's ``enabled(options)`` false)
    are skipped; ``overrides`` set pass fields (see ``Overrides``). ``options.verify``
    verifies the IR after every pass; a failure raises ``IRVerificationError`` naming the
    pass. ``trace(step, fn)`` sees each result of the passes named in
    ``options.print_after`` (all with ``"all"``; every pass when ``print_after`` is
    empty); without ``trace``, ``print_after`` prints to stdout.
    """
    reg = COMMON if registry is None else registry
    if pipeline is None:
        pipeline = options.pipeline if options.pipeline is not None else DEFAULT_PIPELINE
    items = parse_pipeline(pipeline, reg) if isinstance(pipeline, str) else pipeline
    seen: list[tuple[str, Function]] = []
    fn, _ = _Runner(reg, options, overrides or {}, seen).run(fn, items)
    _report(seen, options, trace)
    return fn


@dataclass
class _Runner:
    registry: Registry
    options: CompileOptions
    overrides: Overrides
    seen: list[tuple[str, Function]]

    def run(self, fn: Function, items: Sequence[Item]) -> tuple[Function, bool]:
        """``fn`` after ``items``, and whether every pass with an ``applied`` test applied."""
        applied = True
        for item in items:
            if isinstance(item, First):
                fn = self.first(fn, item)
                continue
            if _skipped(item, self.registry, self.options):
                continue
            p = make_pass(item, self.registry, self.options, self.overrides)
            fn = p.run(fn)
            if self.options.verify:
                _verify_after(str(item), fn)
            self.seen.append((str(item), fn))
            test = getattr(p, "applied", None)
            if test is not None and not test(fn):
                applied = False
        return fn, applied

    def first(self, fn: Function, item: First) -> Function:
        for alt in item.alternatives:
            if any(_required(s, self.registry) and _skipped(s, self.registry, self.options)
                   for s in _steps(alt)):  # fmt: skip
                continue
            tried = _Runner(self.registry, self.options, self.overrides, [])
            out, applied = tried.run(fn, alt)
            if applied:
                self.seen.extend(tried.seen)
                return out
        return fn


def _steps(items: Sequence[Item]) -> list[Step]:
    out: list[Step] = []
    for item in items:
        if isinstance(item, First):
            for alt in item.alternatives:
                out += _steps(alt)
        else:
            out.append(item)
    return out


def _report(seen: list[tuple[str, Function]], options: CompileOptions, trace: Trace | None) -> None:
    wanted = options.print_after
    for step, fn in seen:
        name = step.split("{", 1)[0]
        if wanted and "all" not in wanted and name not in wanted:
            continue
        if trace is not None:
            trace(step, fn)
        elif wanted:
            print(f"// IR after {step}\n{print_function(fn)}")


def _verify_after(step: str, fn: Function) -> None:
    try:
        verify(fn)
    except IRVerificationError as err:
        err.add_note(f"after pass {step!r}:\n{print_function(fn)}")
        raise
