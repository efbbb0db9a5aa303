"""Loads first (pass ``early_loads``; GPU kernels, ``offload.ptx.plan``).

A memory-bound element function reads its inputs where the source uses them: Black-Scholes
reads ``put[i]`` after two correctly rounded divisions, a square root and two reciprocals.
On the GPU each of those has a slow path that ptxas calls as a subroutine, and no load
moves across a call, so that read's whole memory latency comes after the arithmetic. This
pass moves, in every block, each ``LOAD`` and the ops its index needs to the front of the
block, in their original order; the other ops follow in theirs. Every load of the block is
then issued before the arithmetic that does not feed an index.

That is a valid order: the moved ops are closed under "an operand defined in this block",
so each still follows what it uses, and the ops left behind only come later. It changes no
value: ops are pure, only loads can fault (``ops.MAY_FAULT``), and a block runs whole or
not at all, so a moved load runs exactly when it ran before, with the same index. A load
whose index needs a shared-memory op (``STAGE``, ``TILE_READ``, ``BARRIER``: ordered among
themselves) stays where it is; bounds-checked kernels (which report the first faulting
read in source order) do not run the pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from offload.ir.core import Block, Function, Op, Value
from offload.ir.ops import LOCAL_OPS, Opcode
from offload.opt.base import FunctionPass
from offload.options import CompileOptions

_ORDERED = frozenset({Opcode.STAGE, Opcode.TILE_READ, Opcode.BARRIER}) | LOCAL_OPS
"""Shared-memory and local-array ops, which keep their places among themselves."""


def _needs(op: Op, defs: dict[Value, Op]) -> set[int]:
    """The ops of the block that ``op`` needs, transitively, ``op`` included (by id)."""
    seen: set[int] = set()
    todo = [op]
    while todo:
        x = todo.pop()
        if id(x) not in seen:
            seen.add(id(x))
            todo.extend(defs[v] for v in x.operands if v in defs)
    return seen


def _loads_first(block: Block) -> list[Op]:
    """``block``'s ops with every load and the ops its index needs moved to the front."""
    defs: dict[Value, Op] = {op.result: op for op in block.ops}
    ordered = {id(op) for op in block.ops if op.opcode in _ORDERED}
    early: set[int] = set()
    for op in block.ops:
        if op.opcode is Opcode.LOAD:
            needs = _needs(op, defs)
            if not needs & ordered:
                early |= needs
    front = [op for op in block.ops if id(op) in early]
    return front + [op for op in block.ops if id(op) not in early]


@dataclass(frozen=True)
class EarlyLoads(FunctionPass):
    """Move each block's loads, with their index computations, to the block's front."""

    name = "early_loads"

    @classmethod
    def enabled(cls, options: CompileOptions) -> bool:
        """Not with bounds checks: they report the first faulting read in source order."""
        return not options.bounds_check

    def rewrite(self, fn: Function) -> Function:
        for block in fn.blocks:
            block.ops = _loads_first(block)
        return fn
