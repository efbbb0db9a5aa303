"""What both control-flow emitters share: value names, line markers, one block's ops, and
the parallel assignment of block arguments that precedes every control transfer."""

from __future__ import annotations

import ast

from offload.diagnostics import CompileError, Span
from offload.emit.hooks import EmitHooks
from offload.emit.ops import OpContext, emit_op
from offload.emit.template import assign, name
from offload.ir.core import Block, Branch, Function, Jump, Return, Value
from offload.ir.types import ArrayType

LINE_MARKER = "__offload_line__:"
"""Prefix of the string statements that ``pysrc.print_source`` turns into line comments."""


def _ident(hint: str | None, n: int) -> str:
    base = "".join(c if (c.isascii() and (c.isalnum() or c == "_")) else "_" for c in hint or "v")
    if base[0].isdigit():
        base = "v" + base
    return f"{base}_{n}"


class Names:
    """SSA value -> variable name, numbered like the IR printer (so dumps line up)."""

    def __init__(self, fn: Function, hooks: EmitHooks, entry_is_target: bool) -> None:
        self.names: dict[Value, str] = {}
        self.params: dict[Value, int] = {v: k for k, v in enumerate(fn.params)}
        self.captures: dict[Value, int] = {v: k for k, v in enumerate(fn.capture_params)}
        self.hooks = hooks
        n = 0
        for k, block in enumerate(fn.blocks):
            for v in block.args:
                if k > 0 or entry_is_target:
                    self.names[v] = _ident(v.hint, n)
                n += 1
            for op in block.ops:
                self.names[op.result] = _ident(op.result.hint, n)
                n += 1

    def ref(self, v: Value) -> ast.expr:
        """The expression that reads ``v``: its variable, or the backend's parameter."""
        if v in self.names:
            return name(self.names[v])
        if v in self.params and not isinstance(v.type, ArrayType):
            return name(self.hooks.param_name(self.params[v]))
        raise CompileError(f"value {v!r} is used but never defined (IR did not verify)")

    def var(self, v: Value) -> str:
        """The variable assigned to ``v``."""
        return self.names[v]

    def capture_of(self, v: Value) -> int:
        """The capture index of an array parameter."""
        if v not in self.captures:
            raise CompileError("a captured array is only usable directly as a load/shape operand")
        return self.captures[v]


def marker(span: Span) -> ast.stmt:
    """The string statement that ``print_source`` prints as ``# offload: file:line``."""
    return ast.Expr(ast.Constant(f"{LINE_MARKER}{span.file}:{span.line}"))


class Lines:
    """Inserts a line marker whenever the source line changes within one statement list."""

    def __init__(self) -> None:
        self.last: tuple[str, int] | None = None

    def add(self, out: list[ast.stmt], span: Span | None, stmts: list[ast.stmt]) -> None:
        if span is not None and stmts and (span.file, span.line) != self.last:
            out.append(marker(span))
            self.last = (span.file, span.line)
        out.extend(stmts)


def block_ops(block: Block, cx: OpContext, lines: Lines) -> list[ast.stmt]:
    """The statements of ``block``'s ops (its terminator is the caller's)."""
    out: list[ast.stmt] = []
    for op in block.ops:
        lines.add(out, op.span, emit_op(op, cx))
    return out


def ret_stmts(t: Return, names: Names, hooks: EmitHooks) -> list[ast.stmt]:
    """``hooks.ret`` of the returned values (the caller adds the transfer that ends it)."""
    return hooks.ret([names.ref(v) for v in t.values])


def pass_args(target: Block, args: list[Value], names: Names) -> list[ast.stmt]:
    """Assign ``args`` to ``target``'s argument variables (a parallel assignment)."""
    if len(args) != len(target.args):
        raise CompileError("a branch passes the wrong number of block arguments")
    pairs = [
        (names.var(p), names.ref(a))
        for p, a in zip(target.args, args, strict=True)
        if not isinstance(p.type, ArrayType)
    ]
    if not pairs:
        return []
    if len(pairs) == 1:
        return [assign(pairs[0][0], pairs[0][1])]
    # parallel assignment: a loop header's new values may read its old ones
    return [assign([p for p, _ in pairs], ast.Tuple([a for _, a in pairs], ast.Load()))]


def cross_block_values(fn: Function, entry_is_target: bool) -> list[Value]:
    """Values that live across blocks: block arguments and ops used outside their block.

    They get a typed zero before any control flow so that numba sees one definite type on
    every path (njit and numba.cuda alike)."""
    where: dict[Value, Block] = {}
    for block in fn.blocks:
        for op in block.ops:
            where[op.result] = block
    live: dict[Value, None] = {}
    for k, block in enumerate(fn.blocks):
        if k > 0 or entry_is_target:
            for v in block.args:
                if not isinstance(v.type, ArrayType):
                    live[v] = None
        used = [v for op in block.ops for v in op.operands] + _terminator_uses(block)
        for v in used:
            if v in where and where[v] is not block:
                live[v] = None
    return list(live)  # definition-independent but deterministic: first-use order


def _terminator_uses(block: Block) -> list[Value]:
    t = block.terminator
    if isinstance(t, Jump):
        return list(t.args)
    if isinstance(t, Branch):
        return [t.cond, *t.then_args, *t.else_args]
    if isinstance(t, Return):
        return list(t.values)
    return []
