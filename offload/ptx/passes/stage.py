"""Shared-memory staging of a reduction loop's reads (GPU backend only; not in the registry).

``C[i, j] = sum(A[i, k] * Bt[j, k] for k in range(n))`` as an element function reads a
row of ``A`` that every thread of row ``i`` reads too, and a row of ``Bt`` that every thread
of column ``j`` reads too; with ``j`` across a warp the ``Bt`` reads do not coalesce and
the kernel is bound by L1 traffic (matrix-mult: 89x cuBLAS, ncu run 4). This pass makes the
threads of a ``tile`` x ``tile`` thread tile share those reads: the loop runs in chunks of
``tile`` iterations, each chunk's reads are staged into shared memory by the tile's threads
together (one read each), and the iterations read them from there::

    ^chunk(k0, ..):   full = k0 < n and (tile-1)*s < n - k0 ; condbr full, ^stage, ^H(k0, ..)
    ^stage:           barrier ; per slot: stage(a, index(k0 + lane*s)) ; barrier
                      br ^tile(0, k0, ..)
    ^tile(it, k, ..): condbr it < tile, ^tile_body, ^chunk(k, ..)
    ^tile_body:       H's and B's ops, each staged load a tile_read(.., it) ;
                      br ^tile(it + 1, k + s, ..)
    ^H / ^B:          the original loop, unchanged: it runs the last (< tile) iterations

A load of the loop body is staged ("a slot") when its indices are computed from the counter
and from values that depend on exactly one index parameter (``offload.analysis.uniform``):
then it is the same for every thread of a tile column (or row), and the thread at lane
``l`` of that column stages the read of iteration ``l`` of the chunk. Every staged read is
one that some thread of the tile makes at that iteration (threads past the edge of the index
space compute a clamped copy of an edge element), so staging reads nothing the element
function does not; iterations run in their order (bit-exact).

Barriers need every thread of a tile to run the loop alike, so the pass takes only a loop
that is not nested in another, whose start, step and bound are uniform, and that is reached
through uniform branches only; the step is a constant in ``[1, 2**16]``. A chunk is staged
only when all its iterations run (``k0 + (tile-1)*s < n``, tested without wrapping), so
``k0 + lane*s`` cannot wrap either. At
most one loop per kernel is staged (the first such loop with a slot).

A rank-1 kernel runs in lines of ``line`` threads (the chunk is ``line`` iterations) and
stages two kinds of reads: one that varies with no index (every thread of the line reads
it: n-body's ``x[j]``), and a *window* ``a[i + k + c]`` of a step-1 loop (1-D convolution's
``re[t + k]``: the line's elements read ``2 * line - 1`` neighbouring elements in a chunk,
so its lanes stage them once, two each, where an element of the line reads them).
"""

from __future__ import annotations

from dataclasses import dataclass

from offload.analysis.ranges import type_range
from offload.analysis.uniform import NONE, Deps, thread_dependence
from offload.ir.cfg import predecessors
from offload.ir.core import Block, Branch, Function, Jump, Op, Value
from offload.ir.ops import MAY_FAULT, TILE_OPS, Opcode
from offload.ir.tile_ops import tile_of
from offload.ir.types import BOOL, I32, INDEX, ArrayType, ScalarType
from offload.opt.base import FunctionPass
from offload.opt.counted import CountedLoop, enter_before, match_counted
from offload.opt.util import Loop, const_value, definitions, natural_loops
from offload.options import CompileOptions

MAX_STEP = 1 << 16


@dataclass(frozen=True)
class _Slot:
    """One staged load: ``along`` is the index parameter its value varies with (-1: none,
    in a rank-1 kernel)."""

    load: Op
    along: int
    slice: list[Op]
    """The loop's ops that compute its indices, in order (from the counter and outside)."""
    window: tuple[Value, Value] | None = None
    """A rank-1 window ``a[x + u]``: ``x`` the element's index, ``u`` from the counter."""


@dataclass(frozen=True)
class _Plan:
    loop: CountedLoop
    step: int
    slots: list[_Slot]


def _reaches(fn: Function, loop: Loop) -> set[Block]:
    """The blocks outside ``loop`` from which its header can be reached."""
    preds = predecessors(fn)
    seen: set[Block] = set()
    work = [p for p in preds[loop.header] if p not in loop.blocks]
    while work:
        b = work.pop()
        if b in seen or b in loop.blocks:
            continue
        seen.add(b)
        work.extend(preds[b])
    return seen


def _slice(load: Op, c: CountedLoop, deps: dict[Value, Deps]) -> tuple[list[Op], Deps] | None:
    """The ops of the loop computing ``load``'s indices and what their outside inputs
    depend on; ``None`` if an index depends on another loop value or on a load."""
    ops = c.header.ops + c.body.ops
    inside = {op.result: op for op in ops}
    loop_args = set(c.header.args) | set(c.body.args)
    needed: set[int] = set()
    outer: set[int] = set()
    work = list(load.operands[1:])
    while work:
        v = work.pop()
        if v is c.counter:
            continue
        op = inside.get(v)
        if op is None:
            if v in loop_args:
                return None
            outer |= deps.get(v, NONE)
            continue
        if op.opcode in MAY_FAULT or op.opcode in TILE_OPS:
            return None
        if id(op) not in needed:
            needed.add(id(op))
            work.extend(op.operands)
    return [op for op in ops if id(op) in needed], frozenset(outer)


def _plan_loop(
    fn: Function,
    loop: Loop,
    deps: dict[Value, Deps],
    tile: int,
    budget: int,
    *,
    exact: frozenset[ScalarType],
) -> _Plan | None:
    c = match_counted(fn, loop)
    if c is None or deps.get(c.step, NONE) or deps.get(c.bound, NONE):
        return None
    defs = definitions(fn)
    step = const_value(defs, c.step)
    if not isinstance(step, int) or isinstance(step, bool) or not 1 <= step <= MAX_STEP:
        return None
    if deps.get(c.counter, NONE):
        return None
    for b in _reaches(fn, loop):
        t = b.terminator
        if isinstance(t, Branch) and deps.get(t.cond, NONE):
            return None  # threads of a tile might not all reach the loop
    reads = _Reads(fn, c, defs, step, exact)
    slots: list[_Slot] = []
    for op in c.body.ops:
        if op.opcode is not Opcode.LOAD:
            continue
        arr = op.operands[0].type
        assert isinstance(arr, ArrayType)
        found = _slice(op, c, deps)
        slot = None if arr.elem.is_bool or found is None else reads.slot_of(op, found)
        if slot is None:
            continue
        # elements of shared memory: a padded tile, a line, or a window of two lines
        cost = tile * (tile + 1 if fn.rank == 2 else 2 if slot.window else 1)
        cost *= arr.elem.dtype.itemsize
        if cost <= budget:
            slots.append(slot)
            budget -= cost
    return _Plan(c, step, slots) if slots else None


@dataclass(frozen=True)
class _Reads:
    """Which loads of a counted loop ``c`` of ``fn`` are slots (``exact``: the integer
    types a cast of the element index to keeps every index)."""

    fn: Function
    c: CountedLoop
    defs: dict[Value, Op]
    step: int
    exact: frozenset[ScalarType]

    def slot_of(self, load: Op, found: tuple[list[Op], Deps]) -> _Slot | None:
        """A rank-2 kernel's read that varies with one index; a rank-1 kernel's read that
        varies with no index (the line's threads read the same element), or a window
        ``a[x + u]`` (see ``window``)."""
        ops, outer = found
        if self.fn.rank == 2:
            if outer not in (frozenset({0}), frozenset({1})):
                return None
            (along,) = outer
            return _Slot(load, along, ops)
        if not outer:
            return _Slot(load, -1, ops)
        window = self.window(load) if self.step == 1 else None
        return _Slot(load, 0, ops, window) if window is not None else None

    def window(self, load: Op) -> tuple[Value, Value] | None:
        """``(x, u)`` where ``load`` reads ``a[x + u]`` of a rank-1 ``a``, ``x`` is the
        element's index (or its cast to one of the ``exact`` types) and ``u`` is the counter
        plus or minus a value from outside the loop: then ``u`` grows by one an iteration
        (the step is 1), and the line's elements read ``2 * tile - 1`` neighbouring elements
        in a chunk."""
        if len(load.operands) != 2:
            return None
        add = self.defs.get(load.operands[1])
        if add is None or add.opcode is not Opcode.ADD:
            return None
        for x, u in ((add.operands[0], add.operands[1]), (add.operands[1], add.operands[0])):
            if self._is_element(x) and self._from_counter(u):
                return x, u
        return None

    def _is_element(self, v: Value) -> bool:
        op = self.defs.get(v)
        if op is not None and op.opcode is Opcode.CAST and op.result.type in self.exact:
            v = op.operands[0]
        return v is self.fn.params[0]

    def _from_counter(self, u: Value) -> bool:
        c = self.c
        if u is c.counter:
            return True
        op = self.defs.get(u)
        if op is None or op.opcode not in (Opcode.ADD, Opcode.SUB):
            return False
        a, b = op.operands
        if op.opcode is Opcode.ADD and b is c.counter:
            a, b = b, a
        inside = {o.result for o in c.header.ops + c.body.ops}
        return a is c.counter and b not in inside and b not in c.header.args


class _Emitter:
    """Appends new ops to blocks."""

    def __init__(self, block: Block) -> None:
        self.block = block

    def op(self, opcode: Opcode, operands: list[Value], t: ScalarType, **attrs: object) -> Value:
        result = Value(t)
        self.block.ops.append(Op(opcode, operands, result, dict(attrs)))
        return result

    def const(self, value: int, t: ScalarType) -> Value:
        return self.op(Opcode.CONST, [], t, value=value)

    def copy(self, op: Op, vmap: dict[Value, Value]) -> Value:
        result = Value(op.result.type, op.result.hint)
        operands = [vmap.get(x, x) for x in op.operands]
        self.block.ops.append(Op(op.opcode, operands, result, dict(op.attrs), op.span))
        vmap[op.result] = result
        return result


def _fresh(block: Block, hint: str, extra: list[Value] | None = None) -> Block:
    return Block(args=[*(extra or []), *(Value(a.type, a.hint) for a in block.args)], hint=hint)


def _rewrite(fn: Function, plan: _Plan, tile: int) -> None:
    c, s = plan.loop, plan.step
    h, body, k = c.header, c.body, c.counter
    kt = k.type
    assert isinstance(kt, ScalarType)
    chunk = _fresh(h, "chunk")
    stage = Block(hint="stage")
    inner = _fresh(h, "tile", [Value(kt, "it")])
    inner_body = Block(hint="tile_body")

    # ^chunk: a full chunk of `tile` iterations remains: k0 + span < n, tested as
    # k0 < n - span where that cannot wrap (the `and` discards it where it can).
    e = _Emitter(chunk)
    k0 = chunk.args[c.k_index]
    span = (tile - 1) * s
    low = e.const(type_range(kt).lo + span, kt)
    last = e.op(Opcode.SUB, [c.bound, e.const(span, kt)], kt)
    full = e.op(
        Opcode.AND,
        [e.op(Opcode.GE, [c.bound, low], BOOL), e.op(Opcode.LT, [k0, last], BOOL)],
        BOOL,
    )
    chunk.terminator = Branch(full, stage, [], h, list(chunk.args))

    # ^stage: lane l of a tile column (row) stages the read of iteration l of the chunk;
    # in a rank-1 kernel, lane l of the line (a window: positions l and l + tile).
    e = _Emitter(stage)
    e.op(Opcode.BARRIER, [], BOOL)
    at_lane: dict[int, Value] = {}
    for n, slot in enumerate(plan.slots):
        if slot.window is not None:
            vmap = {k: k0}
            for op in slot.slice:
                e.copy(op, vmap)
            x, u = (vmap.get(v, v) for v in slot.window)
            for at in (0, tile):
                e.op(Opcode.STAGE, [slot.load.operands[0], x, u], BOOL, slot=n, tile=tile,
                     offset=at)  # fmt: skip
            continue
        # the lanes run across the axis the read does not vary with (rank 1: the line's)
        axis = 0 if fn.rank == 1 else 1 - slot.along
        if axis not in at_lane:
            lane = e.op(Opcode.LANE, [], kt, axis=axis)
            offset = lane if s == 1 else e.op(Opcode.MUL, [lane, e.const(s, kt)], kt)
            at_lane[axis] = e.op(Opcode.ADD, [k0, offset], kt)
        vmap = {k: at_lane[axis]}
        for op in slot.slice:
            e.copy(op, vmap)
        index = [vmap.get(x, x) for x in slot.load.operands]
        e.op(Opcode.STAGE, index, BOOL, slot=n, tile=tile)
    e.op(Opcode.BARRIER, [], BOOL)
    stage.terminator = Jump(inner, [e.const(0, kt), *chunk.args])

    # ^tile: `tile` iterations of the loop, every staged load read from its slot.
    e = _Emitter(inner)
    it, args = inner.args[0], inner.args[1:]
    more = e.op(Opcode.LT, [it, e.const(tile, kt)], BOOL)
    inner.terminator = Branch(more, inner_body, [], chunk, list(args))
    e = _Emitter(inner_body)
    vmap = dict(zip(h.args, args, strict=True))
    for op in h.ops:
        e.copy(op, vmap)
    vmap.update(zip(body.args, [vmap.get(x, x) for x in c.into_body()], strict=True))
    slot_of = {id(slot.load): (n, slot) for n, slot in enumerate(plan.slots)}
    for op in body.ops:
        if id(op) not in slot_of:
            e.copy(op, vmap)
            continue
        n, slot = slot_of[id(op)]
        index = [vmap.get(x, x) for x in op.operands]
        result = Value(op.result.type, op.result.hint)
        inner_body.ops.append(
            Op(Opcode.TILE_READ, [*index, it], result, {"slot": n, "along": slot.along}, op.span)
        )
        vmap[op.result] = result
    latch = body.terminator
    assert isinstance(latch, Jump)
    step_it = e.op(Opcode.ADD, [it, e.const(1, kt)], kt)
    inner_body.terminator = Jump(inner, [step_it, *(vmap.get(x, x) for x in latch.args)])

    # The edges that entered the loop now enter the chunk loop.
    enter_before(fn, c, chunk, [chunk, stage, inner, inner_body])


@dataclass(frozen=True)
class StageTiles(FunctionPass):
    """Stage the reads of a rank-1 or rank-2 kernel's first eligible reduction loop."""

    name = "stage"
    tile: int = 16
    """The thread tile's edge: a rank-2 kernel runs in ``tile`` x ``tile`` thread blocks."""
    line: int = 256
    """A rank-1 kernel's threads per block (and iterations per chunk)."""
    index_bits: int = 64
    """32 for the kernel of launches under the guard (``offload.ptx.guard``), where every
    index fits an ``i32``: a window's element index may then be its cast to ``i32``."""
    max_shared: int = 48 << 10
    """Shared-memory bytes of the slots at most (each takes ``tile * (tile + 1)`` elements,
    in a rank-1 kernel ``line`` and a window ``2 * line``):
    CUDA's limit on a block's static shared memory. Loads past it stay global reads."""

    @classmethod
    def enabled(cls, options: CompileOptions) -> bool:
        """Not with bounds checks: a staged read is made by another thread than the
        element's, so its fault would name the wrong element."""
        return not options.bounds_check

    def applied(self, fn: Function) -> bool:
        """Whether ``fn`` (this pass's result) has a staged loop."""
        return tile_of(fn) is not None

    def rewrite(self, fn: Function) -> Function:
        tile = self.tile if fn.rank == 2 else self.line if fn.rank == 1 else 0
        if tile < 1:
            return fn
        exact = frozenset({INDEX, I32} if self.index_bits == 32 else {INDEX})
        deps = thread_dependence(fn)
        loops = natural_loops(fn)
        order = {b: n for n, b in enumerate(fn.blocks)}
        for loop in sorted(loops, key=lambda lp: order[lp.header]):
            if any(o is not loop and loop.header in o.blocks for o in loops):
                continue  # nested: the loop would be entered again after divergent code
            plan = _plan_loop(fn, loop, deps, tile, self.max_shared, exact=exact)
            if plan is not None:
                _rewrite(fn, plan, tile)
                break
        return fn
