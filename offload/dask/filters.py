"""``filter(pred, a)`` over a 1-D Dask array, and the results whose lengths are unknown.

Each block is filtered by offload on the worker (``compute_s``/``compute_p``/``compute_g``
of ``filter(pred, block)``, as the call's target says); the blocks stay in order, so the
result is the concatenation of the blocks' results: ``compute_s``'s elements, bit for bit
(a filter computes nothing on them). How many elements a block keeps is known only once
it has run, so the result's chunks are ``nan`` (as Dask's own boolean indexing gives);
its ``meta`` is given, so Dask never runs a kernel to learn its type.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.acc.combine import compile_combine
from offload.acc.filter import Filter
from offload.dask.producers import Producer, block_of, producer_functions, source_dtypes
from offload.dask.runtime import Runner, block_source, canonical, job_token
from offload.dask.sources import Sources, collect
from offload.dask.tasks import Key, Tasks, block_key
from offload.diagnostics import TypeMismatch


@dataclass(frozen=True)
class FilterJob:
    """What a filter's tasks share (pickled into each task; ``runtime.canonical``)."""

    token: str
    pred: Callable[..., Any]
    runner: Runner
    sources: Sources
    producer: Producer | None = None
    """An element-wise tree over the blocks, fused into the filter (``producers``)."""

    def functions(self) -> tuple[object, ...]:
        return (self.pred, *producer_functions(self.producer))


def filter_block(job: FilterJob, *blocks: Any) -> tuple[Any, ...]:
    """One block's elements where the predicate holds, in order (a worker task)."""
    job = canonical(job)
    return job.runner.run(Filter(job.pred, block_of(job.producer, blocks)))


def filter_tree(
    comps: Sequence[Any], node: Filter, runner: Runner, producer: Producer | None = None
) -> list[Any]:
    """``node``'s predicate over the 1-D Dask arrays ``comps`` (the components of its
    source, chunked alike): one Dask array per component, of unknown chunk sizes. With a
    ``producer``, ``comps`` are its arrays and the filter keeps values of the tree."""
    x = comps[0]
    dtypes = source_dtypes(comps, producer)
    what = "filter's predicate"
    pf = compile_combine(node.pred, (dtypes,), "pred", what)  # errors here, located
    if len(pf.result_dtypes) != 1:
        raise TypeMismatch(f"{what} returns {len(pf.result_dtypes)} values, not one")
    tasks = Tasks("filter", comps)
    token = job_token("filter", node.pred, runner, producer)
    sources = collect(node.pred, *producer_functions(producer))
    job = FilterJob(token, node.pred, runner, sources, producer)
    blocks: dict[tuple[int, ...], Key] = {}
    for j in range(x.numblocks[0]):
        keys = [block_key(c, (j,)) for c in comps]
        blocks[(j,)] = tasks.add("b", (j,), filter_block, job, *keys)
    chunks = ((math.nan,) * x.numblocks[0],)
    return tasks.arrays(blocks, chunks, [runner.meta(1, dt) for dt in dtypes])


def unknown_sizes(x: Any) -> bool:
    """Whether the Dask array ``x`` has chunks of unknown size."""
    return any(math.isnan(c) for axis in x.chunks for c in axis)


@dataclass(frozen=True)
class CastJob:
    """A conversion of every block to ``dtype`` (``compute_s(node, dtype=)``'s)."""

    dtype: Any
    runner: Runner


def cast_block(job: CastJob, *blocks: Any) -> tuple[Any, ...]:
    """One block converted as ``compute_*(..., dtype=)`` converts (a worker task)."""
    return job.runner.run(block_source(blocks), dtype=job.dtype)


def cast_tree(comps: Sequence[Any], dtype: Any, runner: Runner) -> list[Any]:
    """The Dask arrays ``comps`` (chunked alike, of any chunk sizes, known or not)
    converted block by block to ``dtype`` (one for all components, or one each)."""
    x = comps[0]
    dts = dtype if isinstance(dtype, tuple | list) else (dtype,) * len(comps)
    tasks = Tasks("cast", comps)
    job = CastJob(dtype, runner)
    blocks: dict[tuple[int, ...], Key] = {}
    for at in np.ndindex(*x.numblocks):
        index = tuple(int(i) for i in at)
        keys = [block_key(c, index) for c in comps]
        blocks[index] = tasks.add("b", index, cast_block, job, *keys)
    return tasks.arrays(blocks, x.chunks, [runner.meta(x.ndim, np.dtype(d)) for d in dts])
