"""Segmented folds and scans (``fold_seg``, ``scanl_seg``, ``scanl1_seg``) over Dask arrays.

The innermost axis is rechunked so that no segment crosses a chunk boundary: each
boundary of the source's chunks moves right to the next segment start (Dask's rechunk
moves only the elements between the two), so the chunks stay about as they were unless
a segment is longer than a chunk. Each block then holds whole segments, and offload
folds (scans) them on the worker exactly as ``compute_*`` does -- each segment in one
piece, so the bits are those of ``compute_s`` for every dtype. A segment starts in the
block it is in; an empty segment sits in the block that starts at its offset (the last
block for those at the end of the axis).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.acc.fold import FoldSeg
from offload.acc.scan import Scan
from offload.acc.skeletons.operands import combine_for, neutral
from offload.dask.producers import Producer, block_of, producer_functions, source_dtypes
from offload.dask.runtime import Runner, canonical, job_token, stand_ins
from offload.dask.sources import Sources, collect
from offload.dask.tasks import Key, Tasks, block_key, grid

Lengths = np.ndarray[Any, np.dtype[np.int64]]


@dataclass(frozen=True)
class SegJob:
    """What a segmented collective's tasks share (``runtime.canonical``)."""

    token: str
    f: Callable[..., Any]
    z: object
    """A ``fold_seg``'s neutral element as the node holds it; a scan's as the user gave it
    (``None`` for ``scanl1_seg``)."""
    scan: tuple[bool, str] | None
    """A scan's ``right`` flag and name, or ``None`` for a fold."""
    runner: Runner
    sources: Sources
    producer: Producer | None = None
    """An element-wise tree over the blocks, fused into the collective (``producers``)."""

    def functions(self) -> tuple[object, ...]:
        return (self.f, *producer_functions(self.producer))


def seg_block(job: SegJob, lengths: Lengths, *blocks: Any) -> tuple[Any, ...]:
    """The segments of one block folded (scanned) on the worker (a worker task)."""
    job = canonical(job)
    src = block_of(job.producer, blocks)
    if job.scan is None:
        offsets = np.zeros(lengths.size + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return job.runner.run(FoldSeg(job.f, job.z, src, offsets))
    right, name = job.scan
    return job.runner.run(Scan(job.f, job.z, src, right=right, seg=lengths, name=name))


def check_lengths(seg: Any, n: int, what: str) -> Lengths:
    """Segment lengths as a host int64 array, checked as ``fold_seg`` checks them."""
    arr = np.asarray(seg)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise TypeError(
            f"{what}: the segment lengths must be a 1-D integer array, not {arr.ndim}-D {arr.dtype}"
        )
    lengths = arr.astype(np.int64)
    if lengths.size and int(lengths.min()) < 0:
        raise ValueError(f"{what}: segment lengths must be non-negative")
    if int(lengths.sum()) != n:
        raise ValueError(
            f"{what}: the segment lengths sum to {int(lengths.sum())} but the axis has {n} elements"
        )
    return lengths


def aligned(inner: Sequence[int], offsets: Lengths) -> tuple[tuple[int, ...], list[Lengths]]:
    """Chunks of the innermost axis whose boundaries are segment starts (each of
    ``inner``'s boundaries moved right to the next), and each chunk's segment lengths."""
    n = int(offsets[-1])
    cuts = np.cumsum(inner)[:-1]
    moved = offsets[np.searchsorted(offsets, cuts, side="left")] if cuts.size else cuts
    bounds = sorted({0, n, *(int(b) for b in moved)})
    chunks = tuple(b - a for a, b in itertools.pairwise(bounds)) or (0,)
    starts = offsets[:-1]
    firsts = [int(np.searchsorted(starts, b, side="left")) for b in bounds[:-1]] or [0]
    lasts = [*firsts[1:], starts.size]
    lengths = np.diff(offsets)
    return chunks, [lengths[a:b] for a, b in zip(firsts, lasts, strict=True)]


def seg_tree(
    comps: Sequence[Any],
    lengths: Lengths,
    node: FoldSeg | Scan,
    runner: Runner,
    producer: Producer | None = None,
) -> list[Any]:
    """A segmented fold or scan (``node``: its function, neutral element and flags; not
    its sources) of the innermost axis of the Dask arrays ``comps`` (the components of
    its source, chunked alike) in segments of ``lengths``: one Dask array per result
    component. With a ``producer``, ``comps`` are its arrays and the collective reads
    the tree over them."""
    f, z = node.f, node.z
    scan = node if isinstance(node, Scan) else None
    x = comps[0]
    dtypes = source_dtypes(comps, producer)
    if scan is None:
        probe = stand_ins(dtypes, (2,))
        out_dtypes = tuple(FoldSeg(f, z, probe, np.array([0, 2])).dtypes)
    else:
        combine_for(f, dtypes, f"{scan.name}'s combine function")  # errors here, located
        if scan.z is not None:
            neutral(scan.z, dtypes, scan.name)
        out_dtypes = dtypes
    offsets = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    inner, per_block = aligned(x.chunks[-1], offsets)
    if inner != x.chunks[-1]:
        comps = [c.rechunk({x.ndim - 1: inner}) for c in comps]
    tasks = Tasks("seg", comps)
    flags = None if scan is None else (scan.right, scan.name)
    token = job_token("seg", f, z, flags, runner, producer)
    sources = collect(f, *producer_functions(producer))
    job = SegJob(token, f, z, flags, runner, sources, producer)
    blocks: dict[tuple[int, ...], Key] = {}
    for rows in grid(comps[0].numblocks[:-1]):
        for j, seg in enumerate(per_block):
            at = (*rows, j)
            keys = [block_key(c, at) for c in comps]
            blocks[at] = tasks.add("b", at, seg_block, job, seg, *keys)
    with_z = scan is None or scan.z is not None
    widths = tuple(
        len(seg) if scan is None else int(seg.sum()) + (len(seg) if with_z else 0)
        for seg in per_block
    )
    metas = [runner.meta(x.ndim, dt) for dt in out_dtypes]
    return tasks.arrays(blocks, (*comps[0].chunks[:-1], widths), metas)
