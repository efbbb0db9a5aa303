"""The element function's control flow as Python statements: ``emit_body``.

A single-block function becomes straight-line code. A CFG becomes a dispatch loop::

    _blk = 0
    while True:
        if _blk == 0:
            ...
            x_7, n_8 = x_3, n_4      # block arguments by parallel assignment
            _blk = 1
        elif _blk == 1:
            ...
            out0[i0] = x_7           # hooks.ret
            break

Values that live across blocks (block arguments and ops used outside their block) are
given a typed zero before the loop, so that numba sees one definite type on every path
(this matters for numba.cuda as much as for njit). Before the statements of each source
line the emitter puts a marker that ``offload.emit.pysrc`` prints as ``# offload: file:line``.
"""

from __future__ import annotations

import ast

from offload.diagnostics import CompileError, Span
from offload.emit.hooks import EmitHooks
from offload.emit.ops import OpContext, emit_op
from offload.emit.template import assign, const, expr, name
from offload.ir.core import Block, Branch, Function, Jump, Return, Value
from offload.ir.types import ArrayType, ScalarType

LINE_MARKER = "__offload_line__:"
"""Prefix of the string statements that ``pysrc.print_source`` turns into line comments."""

BLOCK_VAR = "_blk"


def _ident(hint: str | None, n: int) -> str:
    base = "".join(c if (c.isascii() and (c.isalnum() or c == "_")) else "_" for c in hint or "v")
    if base[0].isdigit():
        base = "v" + base
    return f"{base}_{n}"


class _Names:
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
        if v in self.names:
            return name(self.names[v])
        if v in self.params and not isinstance(v.type, ArrayType):
            return name(self.hooks.param_name(self.params[v]))
        raise CompileError(f"value {v!r} is used but never defined (IR did not verify)")

    def var(self, v: Value) -> str:
        return self.names[v]

    def capture_of(self, v: Value) -> int:
        if v not in self.captures:
            raise CompileError("a captured array is only usable directly as a load/shape operand")
        return self.captures[v]


def _marker(span: Span) -> ast.stmt:
    return ast.Expr(ast.Constant(f"{LINE_MARKER}{span.file}:{span.line}"))


class _Lines:
    """Inserts a line marker whenever the source line changes within one statement list."""

    def __init__(self) -> None:
        self.last: tuple[str, int] | None = None

    def add(self, out: list[ast.stmt], span: Span | None, stmts: list[ast.stmt]) -> None:
        if span is not None and stmts and (span.file, span.line) != self.last:
            out.append(_marker(span))
            self.last = (span.file, span.line)
        out.extend(stmts)


def emit_body(fn: Function, hooks: EmitHooks) -> list[ast.stmt]:
    """Statements that evaluate ``fn`` for one index and hand the results to ``hooks.ret``.

    Pure: the same IR and hooks give the same statements. Raises ``CompileError`` for IR
    the emitter cannot express (which a verified function never is).
    """
    for block in fn.blocks:
        if block.terminator is None:
            raise CompileError(f"block {block.hint or ''} of {fn.name} has no terminator")
    entry_is_target = any(fn.entry in b.successors() for b in fn.blocks)
    names = _Names(fn, hooks, entry_is_target)
    cx = OpContext(names.ref, names.var, names.capture_of, hooks)
    if len(fn.blocks) == 1 and not entry_is_target:
        return _block_stmts(fn.entry, cx, names, {}, single=True)
    ids = {b: k for k, b in enumerate(fn.blocks)}
    out: list[ast.stmt] = []
    for v in _cross_block_values(fn, entry_is_target):
        assert isinstance(v.type, ScalarType)
        out.append(assign(names.var(v), const(0, v.type)))
    if entry_is_target:
        params = [v for v in fn.entry.args if not isinstance(v.type, ArrayType)]
        for v in params:
            out.append(assign(names.var(v), name(hooks.param_name(names.params[v]))))
    out.append(assign(BLOCK_VAR, ast.Constant(0)))
    chain: list[ast.stmt] = []
    for block in reversed(fn.blocks):
        body = _block_stmts(block, cx, names, ids, single=False)
        test = expr(f"{BLOCK_VAR} == k", k=ast.Constant(ids[block]))
        chain = [ast.If(test, body, chain)]
    out.append(ast.While(ast.Constant(True), chain, []))
    return out


def _cross_block_values(fn: Function, entry_is_target: bool) -> list[Value]:
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


def _block_stmts(
    block: Block, cx: OpContext, names: _Names, ids: dict[Block, int], single: bool
) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    lines = _Lines()
    for op in block.ops:
        lines.add(out, op.span, emit_op(op, cx))
    t = block.terminator
    if isinstance(t, Return):
        stmts = cx.hooks.ret([names.ref(v) for v in t.values])
        if not single:
            stmts = [*stmts, ast.Break()]
        lines.add(out, t.span, stmts)
    elif isinstance(t, Jump):
        lines.add(out, t.span, _goto(t.target, t.args, names, ids))
    elif isinstance(t, Branch):
        then = _goto(t.then_target, t.then_args, names, ids)
        other = _goto(t.else_target, t.else_args, names, ids)
        lines.add(out, t.span, [ast.If(names.ref(t.cond), then, other)])
    if not out:
        out.append(ast.Pass())
    return out


def _goto(target: Block, args: list[Value], names: _Names, ids: dict[Block, int]) -> list[ast.stmt]:
    if len(args) != len(target.args):
        raise CompileError("a branch passes the wrong number of block arguments")
    pairs = [
        (names.var(p), names.ref(a))
        for p, a in zip(target.args, args, strict=True)
        if not isinstance(p.type, ArrayType)
    ]
    out: list[ast.stmt] = []
    if len(pairs) == 1:
        out.append(assign(pairs[0][0], pairs[0][1]))
    elif pairs:
        # parallel assignment: a loop header's new values may read its old ones
        out.append(assign([p for p, _ in pairs], ast.Tuple([a for _, a in pairs], ast.Load())))
    out.append(assign(BLOCK_VAR, ast.Constant(ids[target])))
    return out
