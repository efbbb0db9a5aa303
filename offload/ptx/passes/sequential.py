"""One element after another: the fallback of a checked jam (``offload.ptx.passes.jam``).

A blocked function computes several elements, its *copies*, in one control flow. Where the
copies may part ways at a branch, the checked jam leaves that flow for blocks made here:
the element function run whole for each copy in turn, each copy's ``return`` jumping to the
next copy's start with its results, the last one's to a block that returns every copy's
results (copy-major, as the blocked function returns them). The element function is pure,
so starting each copy afresh computes exactly what it computes alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from offload.ir.clone import clone_terminator
from offload.ir.core import Block, Function, Jump, Op, Return, Value


def sequential(
    fn: Function, indices: Sequence[Sequence[Value]], captures: Sequence[Value]
) -> tuple[Block, list[Block]]:
    """Blocks computing ``fn`` at each of ``indices`` (one index parameter value per axis of
    ``fn``) in turn and returning all results; the first block has no arguments."""
    blocks: list[Block] = []
    carried: list[Value] = []  # the results of the copies so far
    nxt = Block(args=[], hint="each")
    first = nxt
    for index in indices:
        start = nxt
        results = [Value(t, "result") for t in fn.result_types]
        nxt = Block(args=results, hint="each")
        blocks += _copy(fn, [*index, *captures], start, nxt)
        carried += results
    nxt.terminator = Return(list(carried), fn.span)
    blocks.append(nxt)
    return first, blocks


def _copy(fn: Function, params: list[Value], start: Block, then: Block) -> list[Block]:
    """``fn``'s blocks for parameter values ``params``: its entry's ops in ``start``, and
    each ``return`` a jump to ``then`` with its values."""
    vmap: dict[Value, Value] = dict(zip(fn.entry.args, params, strict=True))
    bmap: dict[Block, Block] = {fn.entry: start}
    for block in fn.blocks[1:]:
        bmap[block] = Block(args=[], hint=block.hint)
        for a in block.args:
            vmap[a] = Value(a.type, a.hint)
        bmap[block].args = [vmap[a] for a in block.args]
    for op in fn.ops():
        vmap[op.result] = Value(op.result.type, op.result.hint)

    def v(x: Value) -> Value:
        return vmap.get(x, x)

    for block in fn.blocks:
        new = bmap[block]
        new.ops = [
            Op(op.opcode, [v(x) for x in op.operands], vmap[op.result], dict(op.attrs), op.span)
            for op in block.ops
        ]
        t = block.terminator
        if isinstance(t, Return):
            new.terminator = Jump(then, [v(a) for a in t.values], t.span)
        else:
            new.terminator = clone_terminator(t, v, bmap)
    return [bmap[b] for b in fn.blocks]
