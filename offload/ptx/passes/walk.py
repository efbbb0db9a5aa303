"""Walking blocking: each thread computes neighbouring rows (GPU backend; not in the registry).

A stencil over a rank-2 index space (``out[y, x] = sum(k[a, b] * src[y + a - 2, x + b - 2])``,
clamped or not) makes each element read its neighbours: 25 loads an element for a 5 x 5
window, every source element read 25 times through the L1 cache, and its clamped index
arithmetic made again each time. When one thread computes the ``factor`` elements
``(r, x), (r + 1, x), ..., (r + factor - 1, x)`` of one column in one control flow, the
reads of copy ``c`` at row offset ``a + 1`` are those of copy ``c + 1`` at offset ``a``:
the kernel's compiler (NVVM: full unrolling of the constant window loops, then value
numbering) makes them once. A 5 x 5 window over 4 rows reads 8 x 5 values instead of
4 x 25, and a 3 x 3 one 6 x 3 instead of 4 x 9. Neighbouring threads keep neighbouring
columns, so a warp's loads stay coalesced.

For the copies' reads to coincide they must be made at constant offsets: the pass first
unrolls counted loops of constant bounds and a few trips (a stencil's window loops) into
straight-line code, innermost first (``unroll_windows``; NVVM would unroll them fully
only while the blocked body stays under its size threshold). It keeps the iterations in
their order, so every value is computed as before.

The pass is then ``offload.ptx.passes.jam``'s unroll-and-jam with factors ``(factor, 1)`` (the
same conditions: every branch uniform along axis 0, so every copy takes the same path; each
copy computes exactly what the element function computes at its index, in the same order,
so every element is bit-exact). What differs is the mapping of the copies, made by the
kernel (``offload.ptx.kernel_source``, the untiled blocked skeleton): the copies of a
thread are *adjacent* rows ``r + c`` (``jam``'s are ``tile`` rows apart, for shared-memory
staging), with ``r = min(group * factor, rows - factor)``, so every copy is inside the index
space -- the last group overlaps the one before it and computes a few elements twice (the
same values, stored twice) -- and the launch needs ``rows >= factor`` (its guard,
``offload.ptx.choice.WalkGuard``).
"""

from __future__ import annotations

from dataclasses import dataclass

from offload.ir.cfg import predecessors
from offload.ir.core import Block, Branch, Function, Jump, Op, Value
from offload.opt.counted import CountedLoop, match_counted
from offload.opt.simplifycfg import simplify
from offload.opt.util import (
    const_value,
    def_blocks,
    definitions,
    natural_loops,
    replace_uses,
)
from offload.options import CompileOptions
from offload.ptx.passes.jam import JamIndex

MAX_TRIPS = 9
"""Window loops of at most this many trips are unrolled (a 9-tap row)."""
MAX_UNROLLED_OPS = 1500
"""Ops a function may have after unrolling its window loops (code size)."""


@dataclass(frozen=True)
class WalkRows(JamIndex):
    """Block a rank-2 or rank-3 ``fn`` by ``factor`` adjacent indices along axis 0 (see
    above); any other function comes back unchanged (``applied`` says whether it was
    blocked)."""

    name = "walk"
    factor: int = 4

    @classmethod
    def enabled(cls, options: CompileOptions) -> bool:
        """Not with bounds checks: a fault would be reported at the group's first row."""
        return not options.bounds_check

    def rewrite(self, fn: Function) -> Function:
        if fn.rank not in (2, 3) or fn.n_index != fn.rank or self.factor < 2:
            return fn
        unroll_windows(fn)
        factors = (self.factor,) + (1,) * (fn.rank - 1)
        small = sum(len(b.ops) for b in fn.blocks) <= MAX_UNROLLED_OPS  # a fallback's size
        jam = JamIndex(factors=factors, max_carried=self.max_carried, checked=small)
        return jam.rewrite(fn)


def unroll_windows(fn: Function) -> bool:
    """Unroll, in place and innermost first, each counted two-block loop whose start, step
    and bound are constants and which runs at most ``MAX_TRIPS`` times, while the function
    stays under ``MAX_UNROLLED_OPS`` ops; return whether any was unrolled."""
    changed = False
    while True:
        size = sum(len(b.ops) for b in fn.blocks)
        defs, where, preds = definitions(fn), def_blocks(fn), predecessors(fn)
        for loop in natural_loops(fn):
            counted = match_counted(fn, loop, defs, where)
            entry = _entry_edge(counted, preds) if counted is not None else None
            if counted is None or entry is None:
                continue
            trips = _trips(counted, entry, defs)
            body = len(counted.header.ops) + len(counted.body.ops)
            if trips is None or trips > MAX_TRIPS or size + trips * body > MAX_UNROLLED_OPS:
                continue
            _unroll_fully(fn, counted, entry, trips)
            simplify(fn)
            changed = True
            break
        else:
            return changed


def _entry_edge(loop: CountedLoop, preds: dict[Block, list[Block]]) -> Block | None:
    """The one block outside ``loop`` that enters it, by a ``Jump``; else ``None``."""
    outside = [p for p in preds[loop.header] if p is not loop.body]
    if len(outside) != 1 or not isinstance(outside[0].terminator, Jump):
        return None
    return outside[0]


def _trips(loop: CountedLoop, entry: Block, defs: dict[Value, Op]) -> int | None:
    """How many times ``loop`` runs from ``entry``: its start, step (> 0) and bound known."""
    t = entry.terminator
    assert isinstance(t, Jump)
    start = const_value(defs, t.args[loop.k_index])
    step, bound = const_value(defs, loop.step), const_value(defs, loop.bound)
    if not all(type(v) is int for v in (start, step, bound)):
        return None
    assert isinstance(start, int) and isinstance(step, int) and isinstance(bound, int)
    if step <= 0:
        return None
    return max(0, -(-(bound - start) // step))


def _unroll_fully(fn: Function, loop: CountedLoop, entry: Block, trips: int) -> None:
    """Replace ``loop`` by ``trips`` copies of its iterations and a last copy of its header
    (the values its exit reads) in one block that ``entry`` jumps to."""
    header, body = loop.header, loop.body
    t = header.terminator
    latch = body.terminator
    jump = entry.terminator
    assert isinstance(t, Branch) and isinstance(latch, Jump) and isinstance(jump, Jump)
    ops: list[Op] = []
    current = list(jump.args)
    for _ in range(trips):
        current = _iteration(loop, current, ops)
    last: dict[Value, Value] = dict(zip(header.args, current, strict=True))
    for op in header.ops:
        last[op.result] = Value(op.result.type, op.result.hint)
        ops.append(
            Op(op.opcode, [last.get(x, x) for x in op.operands], last[op.result],
               dict(op.attrs), op.span)
        )  # fmt: skip
    out_args = t.else_args if t.then_target is body else t.then_args
    done = Block(args=[], hint=f"{header.hint or 'loop'}_unrolled")
    done.ops = ops
    done.terminator = Jump(loop.exit, [last.get(x, x) for x in out_args], t.span)
    jump.target, jump.args = done, []
    at = fn.blocks.index(header)
    fn.blocks[at : at + 1] = [done]
    fn.blocks.remove(body)
    # The header's arguments and values dominate the code after the loop: read there, they
    # are the last header copy's.
    replace_uses(fn, last)


def _iteration(loop: CountedLoop, current: list[Value], out: list[Op]) -> list[Value]:
    """Append one iteration of ``loop`` (its header's ops, then its body's) for header
    arguments ``current``; return the next iteration's header arguments."""
    vmap: dict[Value, Value] = dict(zip(loop.header.args, current, strict=True))

    def v(x: Value) -> Value:
        return vmap.get(x, x)

    def copy(block: Block) -> None:
        for op in block.ops:
            vmap[op.result] = Value(op.result.type, op.result.hint)
            out.append(
                Op(op.opcode, [v(x) for x in op.operands], vmap[op.result], dict(op.attrs), op.span)
            )

    copy(loop.header)
    vmap.update(zip(loop.body.args, [v(x) for x in loop.into_body()], strict=True))
    copy(loop.body)
    latch = loop.body.terminator
    assert isinstance(latch, Jump)
    return [v(x) for x in latch.args]
