"""``stencil(fn, a, boundary)`` over Dask arrays: each block is computed on the block with
a halo from its neighbours (``dask.array.overlap``), then cut back to the block.

The halo's depth per axis is the farthest offset ``fn`` reads, taken from the lowered IR
(offload's range analysis over an interior block of a probe; a constant expression such
as ``get(1 + 1, 0)`` counts, which a look at the source alone would miss). An axis of
one chunk gets no halo: its blocks hold the whole axis and the stencil's own boundary
rule applies as it does on the whole array. On an axis of several chunks, Dask adds no
halo at the array's edges (``boundary="none"``) for ``"clamp"``, ``"mirror"`` and
``constant(v)``: the block with its halo ends where the array ends, so the rule applied
to the extended block at that edge is the rule of the whole array (a mirrored read at
offset ``-k`` lands on element ``k`` of either; the extended block is longer than the
depth), and an element of the block never reads past its halo on the inner side. For
``"wrap"`` Dask adds the periodic halo at the edges. Every element is computed by the
same element kernel as on the whole array, so the result is ``compute_s``'s bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.acc.stencil import Stencil, stencil
from offload.config import config
from offload.dask.errors import DaskUnsupported
from offload.dask.producers import Producer, block_of, producer_functions, source_dtypes
from offload.dask.runtime import (
    Runner,
    block_source,
    canonical,
    job_token,
    stand_in_arrays,
    stand_ins,
)
from offload.dask.sources import Sources, collect
from offload.dask.tasks import Key, Static, Tasks, block_key, grid
from offload.frontend.reader import make_fetcher
from offload.ir.clone import clone_function
from offload.ir.core import Op, Value
from offload.ir.ops import Opcode
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.opt.util import replace_uses
from offload.stream.window import ReadWindows

PROBE = 1 << 16
"""The probe's extent per axis (an offset beyond a quarter of it is refused)."""

Depth = tuple[tuple[int, int], ...]
"""Per axis, how far the stencil reads below and above an element."""


def depth(node: Stencil, dtypes: tuple[np.dtype[Any], ...]) -> Depth:
    """The offsets ``node.fn`` reads from its source, per axis (module docstring); a
    function's errors are raised here, located."""
    rank = len(node.shape)
    leaves = stand_in_arrays(dtypes, (PROBE,) * rank)
    probe = stencil(node.fn, block_source(leaves), "clamp")
    lowered = check_and_lower(probe, rank)
    values = make_fetcher(lowered.captures)(probe)
    fn = clone_function(lowered.ir)
    consts: list[Op] = []
    mapping: dict[Value, Value] = {}
    for cap, param in zip(lowered.captures, fn.capture_params, strict=True):
        if cap.steps and cap.steps[0] == ("attr", "dims"):  # the source's extents
            op = Op(Opcode.CONST, [], Value(param.type), {"value": PROBE})
            consts.append(op)
            mapping[param] = op.result
    replace_uses(fn, mapping)
    fn.entry.ops = consts + fn.entry.ops
    ir = run_pipeline(fn, config.compile_options())
    ids = {id(a) for a in leaves}
    reads = {k for k, v in enumerate(values) if id(v) in ids}
    extents = {
        k: tuple(int(n) for n in v.shape)
        for k, v in enumerate(values)
        if isinstance(v, np.ndarray) and v.ndim > 0
    }
    mid = PROBE // 2
    windows, unbounded = ReadWindows(ir, extents).of(((mid, mid + 1),) * rank)
    bad = [u for u in unbounded if u.capture in reads]
    if bad:
        raise DaskUnsupported.at(
            "offload.dask: the stencil's reads of its source are not bounded",
            bad[0].span,
            hint="read neighbours at constant offsets: get(-1, 0), get(1 + 1, 0)",
        )
    lo, hi = [0] * rank, [0] * rank
    for k in reads:
        for axis, (start, stop) in enumerate(windows[k]):
            lo[axis] = max(lo[axis], mid - start)
            hi[axis] = max(hi[axis], stop - (mid + 1))
    if max(*lo, *hi) > PROBE // 4:
        raise DaskUnsupported(
            f"offload.dask: the stencil reads {max(*lo, *hi)} elements away, more than "
            f"{PROBE // 4}: compute it on one chunk per axis instead"
        )
    return tuple(zip(lo, hi, strict=True))


@dataclass(frozen=True)
class StencilJob:
    """What a stencil's tasks share (``runtime.canonical``)."""

    token: str
    fn: Any
    boundary: object
    runner: Runner
    sources: Sources
    producer: Producer | None = None
    """An element-wise tree over the blocks, fused into the stencil (``producers``)."""

    def functions(self) -> tuple[object, ...]:
        return (self.fn, *producer_functions(self.producer))


def stencil_block(job: StencilJob, trim: Static, *blocks: Any) -> tuple[Any, ...]:
    """The stencil over one block with its halo, cut back to the block: ``trim`` holds
    the halo's width below and above per axis (a worker task)."""
    job = canonical(job)
    src = block_of(job.producer, blocks)
    out = job.runner.run(stencil(job.fn, src, job.boundary))  # type: ignore[arg-type]
    cut = tuple(slice(a, n - b) for (a, b), n in zip(trim.value, out[0].shape, strict=True))
    return tuple(o[cut] for o in out)


def stencil_tree(
    comps: Sequence[Any], node: Stencil, runner: Runner, producer: Producer | None = None
) -> list[Any]:
    """``node`` over the Dask arrays ``comps`` (the components of its source, chunked
    alike): one Dask array per result component. With a ``producer``, ``comps`` are its
    arrays (their halos are its halos: it is element-wise) and the stencil reads the tree
    over them; the boundary rule applies to the tree's values, as on the whole array."""
    import dask.array as da_module

    da: Any = da_module
    x = comps[0]
    dtypes = source_dtypes(comps, producer)
    out_dtypes = tuple(stencil(node.fn, stand_ins(dtypes, (2,) * x.ndim), node.boundary).dtypes)  # type: ignore[arg-type]
    reach = depth(node, dtypes)
    wrap = node.boundary == "wrap"
    halo: dict[int, int] = {}
    whole: set[int] = set()  # (axes of several chunks shorter than the reach: made one
    # chunk, as Dask's halo cannot be deeper than the axis and one chunk needs none)
    for axis, (lo, hi) in enumerate(reach):
        d = max(lo, hi)
        if d > 0 and len(x.chunks[axis]) > 1:
            if d > sum(x.chunks[axis]):
                whole.add(axis)
            else:
                halo[axis] = d
    if whole:
        merged = tuple((sum(c),) if a in whole else c for a, c in enumerate(x.chunks))
        comps = [c.rechunk(merged) for c in comps]
        x = comps[0]
    if halo:
        chunks = tuple(
            da.overlap.ensure_minimum_chunksize(halo[a], c) if a in halo else c
            for a, c in enumerate(x.chunks)
        )
        comps = [c.rechunk(chunks) for c in comps]
        boundary = dict.fromkeys(halo, "periodic" if wrap else "none")
        extended = [da.overlap.overlap(c, depth=halo, boundary=boundary) for c in comps]
    else:
        extended = list(comps)
    base = comps[0]
    tasks = Tasks("stencil", extended)
    job = StencilJob(
        job_token("stencil", node.fn, node.boundary, runner, producer),
        node.fn,
        node.boundary,
        runner,
        collect(node.fn, *producer_functions(producer)),
        producer,
    )
    blocks: dict[tuple[int, ...], Key] = {}
    for at in grid(base.numblocks):
        trim = []
        for axis, k in enumerate(at):
            d = halo.get(axis, 0)
            last = base.numblocks[axis] - 1
            trim.append((d if (k > 0 or wrap) else 0, d if (k < last or wrap) else 0))
        keys = [block_key(c, at) for c in extended]
        blocks[at] = tasks.add("b", at, stencil_block, job, Static(tuple(trim)), *keys)
    metas = [runner.meta(x.ndim, dt) for dt in out_dtypes]
    return tasks.arrays(blocks, base.chunks, metas)
