"""Undo ``unroll`` (GPU kernels that ``offload.opt.jam`` blocks; not in the registry).

``unroll`` puts a copy ``U`` of a counted loop ``H`` in front of it that runs ``factor``
iterations a trip while all of them are certain to run, then falls through to ``H``, which
runs the rest: entering ``U`` with some arguments computes what entering ``H`` with them
does. A blocked, staged kernel wants the rolled loop: its shared-memory chunk then covers
``tile`` iterations rather than ``tile * factor``, so the slots of ``f0 + f1`` copies fit in
a block's shared memory at larger blocking factors (8 x 8 instead of 4 x 4; matrix-mult
872 us against 1206 us on an H200, ``benchmarks/lab/blocking.py``).

The certificate is ``U``'s loop test, which ``unroll`` marks ``{unrolled = factor}``; the
pass also checks the shape: the test is in ``U``'s header, which leaves to ``H`` passing its
own arguments unchanged. Then every edge that enters ``U`` from outside it enters ``H``
with the same arguments instead, and ``U`` (now unreachable) goes.
"""

from __future__ import annotations

from dataclasses import dataclass

from offload.ir.core import Block, Branch, Function, Jump
from offload.opt.base import FunctionPass
from offload.opt.util import natural_loops, remove_unreachable


def _rolled(block: Block) -> Block | None:
    """``H`` if ``block`` is the header of an unrolled copy of ``H``."""
    t = block.terminator
    if not isinstance(t, Branch):
        return None
    test = next((op for op in block.ops if op.result is t.cond), None)
    if test is None or not test.attrs.get("unrolled"):
        return None
    if t.else_target is block or len(t.else_args) != len(block.args):
        return None
    if any(x is not a for x, a in zip(t.else_args, block.args, strict=True)):
        return None
    return t.else_target


@dataclass(frozen=True)
class Reroll(FunctionPass):
    """Run every unrolled loop's original instead (see above)."""

    name = "reroll"

    def rewrite(self, fn: Function) -> Function:
        for loop in natural_loops(fn):
            rolled = _rolled(loop.header)
            if rolled is None:
                continue
            for block in fn.blocks:
                if block in loop.blocks:
                    continue
                t = block.terminator
                if isinstance(t, Jump) and t.target is loop.header:
                    t.target = rolled
                elif isinstance(t, Branch):
                    if t.then_target is loop.header:
                        t.then_target = rolled
                    if t.else_target is loop.header:
                        t.else_target = rolled
        remove_unreachable(fn)
        return fn
