"""``fold``, ``fold1`` and ``fold_all`` over Dask arrays: a reduction of the innermost axis
in a combine tree fixed by the chunking alone.

Each block's rows are folded by offload on the worker (``fold(f, z, block)``: the fold
``compute_*`` runs on that block, from ``z``, or from the first element for ``fold1``);
then, per row of blocks, groups of ``split_every`` consecutive partials are stacked and
folded with ``f`` (``fold1``), level after level, until one is left. The tree depends on
the chunks and ``split_every`` only, so a chunking gives the same bits on every run,
scheduler and worker. It uses associativity only (never commutativity): partials are
combined in block order. Blocks of width 0 are left out of the tree (a row with no
element at all folds its one empty block: ``z``).

``fold_all`` of a rank-``r`` array folds in row-major order: if only the first axis is
cut into chunks, each block is a run of consecutive elements and the array is folded as
a vector (``reshape(-1)`` without moving data); otherwise the innermost axis is reduced,
then the next, ``r`` times -- the same fold by associativity, with ``z`` neutral.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.acc.fold import NO_Z, Fold
from offload.dask.errors import DaskUnsupported
from offload.dask.producers import Producer, block_of, producer_functions
from offload.dask.runtime import (
    Runner,
    block_source,
    canonical,
    job_token,
    stand_in_arrays,
    stand_ins,
    xp_of,
)
from offload.dask.sources import Sources, collect
from offload.dask.tasks import Key, Tasks, block_key, grid
from offload.stream.fold import SPLIT_EVERY

Dtypes = tuple[np.dtype[Any], ...]


@dataclass(frozen=True)
class FoldJob:
    """What a fold's tasks share (pickled into each task; ``runtime.canonical``)."""

    token: str
    f: Callable[..., Any]
    z: object
    """The neutral element as the node holds it, or ``NO_Z`` (``fold1``, the combines)."""
    runner: Runner
    sources: Sources
    producer: Producer | None = None
    """An element-wise tree over the blocks, fused into the fold (``producers``)."""

    def functions(self) -> tuple[object, ...]:
        return (self.f, *producer_functions(self.producer))


def fold_block(job: FoldJob, *blocks: Any) -> tuple[Any, ...]:
    """The fold of each row of one block (a worker task)."""
    job = canonical(job)
    n = int(blocks[0].shape[-1])
    return job.runner.run(Fold(job.f, job.z, block_of(job.producer, blocks), n))


def fold_partials(job: FoldJob, parts: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """Partials of consecutive blocks folded in order with ``f`` (a worker task)."""
    job = canonical(job)
    xp = xp_of(parts[0][0])
    stacked = [xp.stack([p[c] for p in parts], axis=-1) for c in range(len(parts[0]))]
    return job.runner.run(Fold(job.f, NO_Z, block_source(stacked), len(parts)))


def fold_dtypes(
    f: Callable[..., Any], z: object, dtypes: Dtypes, rank: int, producer: Producer | None = None
) -> Dtypes:
    """The dtypes of a fold of a source of ``dtypes`` (checked and lowered on the client,
    so the function's errors are raised here, located), after checking that ``f``
    combines two partials into a partial of the same dtypes (the tree's combines).
    With a ``producer``, ``dtypes`` are its arrays' and the fold reads the tree."""
    shape = (2,) * rank
    src = producer.source(stand_in_arrays(dtypes, shape)) if producer else stand_ins(dtypes, shape)
    probe = Fold(f, z, src, 2)
    out = tuple(probe.dtypes)
    again = tuple(Fold(f, NO_Z, stand_ins(out, (2,)), 2).dtypes)
    if again != out:
        raise DaskUnsupported(
            f"offload.dask: the fold's combine gives {_names(again)} for two partials of "
            f"{_names(out)}: a fold over Dask arrays combines partials with f, so f must "
            "take and return its result type (an associative f with z of that type)"
        )
    return out


def _names(dtypes: Dtypes) -> str:
    return ", ".join(str(d) for d in dtypes)


def fold_tree(
    comps: Sequence[Any],
    f: Callable[..., Any],
    z: object,
    runner: Runner,
    split_every: int = SPLIT_EVERY,
    *,
    producer: Producer | None = None,
) -> list[Any]:
    """The innermost axis of the Dask arrays ``comps`` (the components of one source,
    chunked alike) folded with ``f`` from ``z``: one Dask array per result component.
    With a ``producer``, ``comps`` are its arrays and the fold reads the tree over them."""
    if split_every < 2:
        raise ValueError(f"split_every must be >= 2, got {split_every}")
    x = comps[0]
    dtypes = fold_dtypes(f, z, tuple(np.dtype(c.dtype) for c in comps), x.ndim, producer)
    tasks = Tasks("fold", comps)
    sources = collect(f, *producer_functions(producer))
    job = FoldJob(job_token("fold", f, z, runner, producer), f, z, runner, sources, producer)
    combine = FoldJob(job_token("fold-combine", f, runner), f, NO_Z, runner, sources)
    inner = x.chunks[-1]
    keep = [j for j, c in enumerate(inner) if c > 0] or [0]
    blocks: dict[tuple[int, ...], Key] = {}
    for rows in grid(x.numblocks[:-1]):
        level = [
            tasks.add("p", (*rows, j), fold_block, job, *[block_key(c, (*rows, j)) for c in comps])
            for j in keep
        ]
        depth = 0
        while len(level) > 1:
            depth += 1
            level = [
                tasks.add(
                    f"c{depth}", (*rows, g), fold_partials, combine, level[k : k + split_every]
                )
                for g, k in enumerate(range(0, len(level), split_every))
            ]
        blocks[rows] = level[0]
    metas = [runner.meta(x.ndim - 1, dt) for dt in dtypes]
    return tasks.arrays(blocks, x.chunks[:-1], metas)


def fold_all_tree(
    comps: Sequence[Any],
    f: Callable[..., Any],
    z: object,
    runner: Runner,
    split_every: int = SPLIT_EVERY,
    *,
    producer: Producer | None = None,
) -> list[Any]:
    """Every element of the Dask arrays ``comps`` folded in row-major order (module
    docstring): 0-d Dask arrays, one per component (with a ``producer``: ``comps`` are its
    arrays, of one shape, and the first level folds the tree over them)."""
    import dask.array as da_module

    da: Any = da_module
    x = comps[0]
    if x.ndim >= 2 and x.size == 0:  # no element: z, as a fold of an empty vector gives
        comps = [da.from_array(c._meta.reshape(0), chunks=((0,),)) for c in comps]
    elif x.ndim >= 2 and all(len(c) == 1 for c in x.chunks[1:]):
        if 0 in x.chunks[0]:  # (Dask's reshape refuses an empty block: dropped, no data)
            lead = tuple(n for n in x.chunks[0] if n)
            comps = [c.rechunk((lead, *c.chunks[1:])) for c in comps]
        comps = [c.reshape(-1) for c in comps]  # each block is a run of the flat array
    out = fold_tree(list(comps), f, z, runner, split_every, producer=producer)
    while out[0].ndim > 0:
        out = fold_tree(out, f, z, runner, split_every)
    return out
