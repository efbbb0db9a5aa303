"""Deep copies of functions, so that a transformation never mutates IR it was not handed."""

from __future__ import annotations

from collections.abc import Callable

from offload.ir.core import Block, Branch, Function, Jump, Op, Return, Terminator, Value


def clone_function(fn: Function) -> Function:
    """A structurally identical copy of ``fn`` with fresh blocks, ops and values."""
    vmap: dict[Value, Value] = {}
    bmap: dict[Block, Block] = {}
    for block in fn.blocks:
        new = Block(hint=block.hint)
        for arg in block.args:
            vmap[arg] = Value(arg.type, arg.hint)
        new.args = [vmap[a] for a in block.args]
        for op in block.ops:
            vmap[op.result] = Value(op.result.type, op.result.hint)
        bmap[block] = new

    def v(value: Value) -> Value:
        # Values defined outside the function (a verifier error) are kept as they are.
        return vmap.get(value, value)

    for block in fn.blocks:
        new = bmap[block]
        new.ops = [
            Op(op.opcode, [v(x) for x in op.operands], vmap[op.result], dict(op.attrs), op.span)
            for op in block.ops
        ]
        new.terminator = clone_terminator(block.terminator, v, bmap)
    return Function(
        fn.name,
        [bmap[b] for b in fn.blocks],
        fn.n_index,
        list(fn.captures),
        list(fn.result_types),
        fn.span,
        fn.blocking,
        clone_function(fn.prologue) if fn.prologue is not None else None,
    )


def clone_terminator(
    term: Terminator | None, v: Callable[[Value], Value], bmap: dict[Block, Block]
) -> Terminator | None:
    """``term`` with its values mapped by ``v`` and its targets by ``bmap``."""
    if isinstance(term, Jump):
        return Jump(bmap[term.target], [v(a) for a in term.args], term.span)
    if isinstance(term, Branch):
        return Branch(
            v(term.cond),
            bmap[term.then_target],
            [v(a) for a in term.then_args],
            bmap[term.else_target],
            [v(a) for a in term.else_args],
            term.span,
            term.uniform,
        )
    if isinstance(term, Return):
        return Return([v(a) for a in term.values], term.span)
    return None
