"""Dead code elimination (pass ``dce``).

Removes unreachable blocks, ops whose results are never used (``LOAD``s included: they have
no effect), and block arguments that no live op, branch condition or return needs, together
with the values passed to them. Liveness starts at returns, branch conditions and the
writes to local arrays that are read (a write to one never read is dead too), and flows
backwards through operands and through edges into live block arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

from offload.ir.core import Branch, Function, Jump, Return, Value
from offload.ir.ops import HAS_EFFECT, Opcode
from offload.opt.base import FunctionPass
from offload.opt.util import definitions, drop_block_args, remove_unreachable


def live_values(fn: Function) -> set[Value]:
    """The values a return or a branch condition needs, transitively."""
    defs = definitions(fn)
    # For each block argument, the values passed to it along every edge.
    feeds: dict[Value, list[Value]] = {}
    work: list[Value] = list(fn.params)
    for block in fn.blocks:
        t = block.terminator
        edges: list[tuple[list[Value], list[Value]]] = []
        if isinstance(t, Return):
            work.extend(t.values)
        elif isinstance(t, Branch):
            work.append(t.cond)
            edges = [(t.then_target.args, t.then_args), (t.else_target.args, t.else_args)]
        elif isinstance(t, Jump):
            edges = [(t.target.args, t.args)]
        for params, args in edges:
            for p, a in zip(params, args, strict=False):
                feeds.setdefault(p, []).append(a)
    # A write to a local array is live where the array is read at all (``ops.HAS_EFFECT``).
    read = {op.operands[0] for op in fn.ops() if op.opcode is Opcode.LOCAL_LOAD}
    work.extend(op.result for op in fn.ops() if op.opcode in HAS_EFFECT and op.operands[0] in read)
    live: set[Value] = set()
    while work:
        v = work.pop()
        if v in live:
            continue
        live.add(v)
        op = defs.get(v)
        if op is not None:
            work.extend(op.operands)
        work.extend(feeds.get(v, ()))
    return live


@dataclass(frozen=True)
class DeadCodeElimination(FunctionPass):
    """Remove unreachable blocks, unused ops and unused block arguments."""

    name = "dce"

    def rewrite(self, fn: Function) -> Function:
        remove_unreachable(fn)
        live = live_values(fn)
        for block in fn.blocks:
            block.ops = [op for op in block.ops if op.result in live]
        for block in fn.blocks[1:]:
            keep = [a in live for a in block.args]
            if not all(keep):
                drop_block_args(fn, block, keep)
        return fn
