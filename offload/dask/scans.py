"""``scanl``, ``scanl1``, ``scanr`` and ``scanr1`` of the innermost axis of Dask arrays.

Per row of blocks, as ``dask.array.cumreduction`` does: each block is scanned on its own
(inclusive: ``scanl1``/``scanr1`` of the block), in parallel; the block totals (the
scan's last element, the first for a right scan) are carried across the blocks in a
fixed order -- left to right, right to left for a right scan -- by a chain of small
tasks, ``carry' = f(carry, total)`` (``f(total, carry)`` to the right); then each block's
scan is combined with the carry into it, in parallel: ``f(carry, s)`` (``f(s, carry)``).
The block where the scan starts (the first, the last for a right scan) needs no carry:
it is scanned from ``z`` by the scan itself (``scanl(f, z, block)``: the result's extra
element, ``z``, is in that block) or from its first element. Only associativity is used,
so ``f`` need not commute; the tree is fixed by the chunks, so the bits do not depend on
the run. Blocks of width 0 give empty blocks (the carry passes them by).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.acc.fold import NO_Z, Fold
from offload.acc.nodes import ALL, extend
from offload.acc.scan import Scan
from offload.acc.skeletons.operands import combine_for, neutral
from offload.dask.producers import Producer, block_of, producer_functions, source_dtypes
from offload.dask.runtime import Runner, block_source, canonical, job_token, xp_of
from offload.dask.sources import Sources, collect
from offload.dask.tasks import Key, Static, Tasks, block_key, grid
from offload.delayed import zip_with


class FromZ:
    """The carry into the block where a scan with ``z`` starts, where that block is empty
    (a task argument: an object Dask does not take for a key)."""


FROM_Z = FromZ()


@dataclass(frozen=True)
class ScanJob:
    """What a scan's tasks share (pickled into each task; ``runtime.canonical``)."""

    token: str
    f: Callable[..., Any]
    z: object
    """The neutral element as the user gave it, or ``None`` (``scanl1``, ``scanr1``)."""
    right: bool
    name: str
    dtypes: tuple[str, ...]
    runner: Runner
    sources: Sources
    producer: Producer | None = None
    """An element-wise tree over the blocks, fused into the scan (``producers``)."""

    def functions(self) -> tuple[object, ...]:
        return (self.f, *producer_functions(self.producer))

    def zs(self) -> list[Any]:
        return neutral(self.z, tuple(np.dtype(d) for d in self.dtypes), self.name)

    def cast(self) -> Any:
        dts = tuple(np.dtype(d) for d in self.dtypes)
        return dts[0] if len(dts) == 1 else dts


Piece = tuple[tuple[Any, ...], tuple[Any, ...]]
"""A block's scan and its edge (the total carried on: last column, first to the right)."""


def _edge(job: ScanJob, outs: tuple[Any, ...]) -> tuple[Any, ...]:
    # (copies: a view would keep the whole block alive as long as the carry)
    return tuple((o[..., 0] if job.right else o[..., -1]).copy() for o in outs)


def scan_start(job: ScanJob, from_z: bool, *blocks: Any) -> Piece:
    """The block where the scan starts: its scan from ``z`` (``from_z``: ``scanl``'s own
    extra element included) or from its first element (a worker task)."""
    job = canonical(job)
    z = job.z if from_z else None
    src = block_of(job.producer, blocks)
    outs = job.runner.run(Scan(job.f, z, src, right=job.right, name=job.name))
    return outs, _edge(job, outs)


def scan_block(job: ScanJob, *blocks: Any) -> Piece:
    """A block's inclusive scan on its own (a worker task)."""
    job = canonical(job)
    src = block_of(job.producer, blocks)
    outs = job.runner.run(Scan(job.f, None, src, right=job.right, name=job.name))
    return outs, _edge(job, outs)


def _carry(job: ScanJob, carry: Any, like: tuple[Any, ...]) -> tuple[Any, ...]:
    if not isinstance(carry, FromZ):
        return tuple(carry)
    xp = xp_of(like[0])
    rows = like[0].shape[:-1]
    return tuple(
        xp.full(rows, z, dtype=np.dtype(d)) for z, d in zip(job.zs(), job.dtypes, strict=True)
    )


def with_carry(job: ScanJob, carry: Any, piece: Piece) -> tuple[Any, ...]:
    """A block's scan combined with the carry into it (a worker task)."""
    job = canonical(job)
    outs = piece[0]
    c = _carry(job, carry, outs)
    *rows, n = outs[0].shape
    spread = extend((*(ALL for _ in rows), n), block_source(c))
    scanned = block_source(outs)
    node = zip_with(job.f, scanned, spread) if job.right else zip_with(job.f, spread, scanned)
    return job.runner.run(node, dtype=job.cast())


def next_carry(job: ScanJob, carry: Any, piece: Piece) -> tuple[Any, ...]:
    """The carry past a block: ``f(carry, total)`` (``f(total, carry)`` to the right)."""
    job = canonical(job)
    edge = piece[1]
    c = _carry(job, carry, piece[0])
    xp = xp_of(edge[0])
    pairs = [
        xp.stack((e, k) if job.right else (k, e), axis=-1) for k, e in zip(c, edge, strict=True)
    ]
    return job.runner.run(Fold(job.f, NO_Z, block_source(pairs), 2), dtype=job.cast())


def fill(job: ScanJob, shape: Static, width: int) -> tuple[Any, ...]:
    """The result block of an empty block (its rows' extents in ``shape``): nothing, or
    ``z`` where the scan's extra element falls (a worker task)."""
    job = canonical(job)
    rows: tuple[int, ...] = shape.value
    xp = xp_of(job.runner.meta(0, np.float64))
    if width == 0:
        return tuple(xp.empty((*rows, 0), dtype=np.dtype(d)) for d in job.dtypes)
    return tuple(
        xp.full((*rows, 1), z, dtype=np.dtype(d)) for z, d in zip(job.zs(), job.dtypes, strict=True)
    )


def scan_tree(
    comps: Sequence[Any],
    node: Scan,
    runner: Runner,
    producer: Producer | None = None,
) -> list[Any]:
    """``node`` (a scan without segments) of the Dask arrays ``comps`` (the components of
    its source, chunked alike), ``z`` included and not split off (``scanl_total``'s parts
    are sliced from it): one Dask array per component. With a ``producer``, ``comps``
    are its arrays and the scan reads the tree over them."""
    x = comps[0]
    dtypes = source_dtypes(comps, producer)
    combine_for(node.f, dtypes, f"{node.name}'s combine function")  # errors here, located
    if node.z is not None:
        neutral(node.z, dtypes, node.name)
    tasks = Tasks(node.name, comps)
    names = tuple(d.str for d in dtypes)
    sources = collect(node.f, *producer_functions(producer))
    token = job_token("scan", node.f, node.z, node.right, node.name, names, runner, producer)
    job = ScanJob(token, node.f, node.z, node.right, node.name, names, runner, sources, producer)
    inner = x.chunks[-1]
    m = len(inner)
    start = m - 1 if node.right else 0
    widths = list(inner)
    if node.z is not None:
        widths[start] += 1
    order = range(m - 1, -1, -1) if node.right else range(m)
    blocks: dict[tuple[int, ...], Key] = {}
    for rows in grid(x.numblocks[:-1]):
        shape = tuple(x.chunks[a][k] for a, k in enumerate(rows))
        carry: Any = FROM_Z if node.z is not None else None
        for j in order:
            at = (*rows, j)
            if inner[j] == 0:
                blocks[at] = tasks.add("e", at, fill, job, Static(shape), widths[j])
                continue
            keys = [block_key(c, at) for c in comps]
            if carry is None or (j == start and isinstance(carry, FromZ)):
                piece = tasks.add("s", at, scan_start, job, carry is not None, *keys)
                blocks[at] = tasks.add("o", at, _outs, piece)
                carry = tasks.add("k", at, _edge_of, piece)
            else:
                piece = tasks.add("s", at, scan_block, job, *keys)
                blocks[at] = tasks.add("o", at, with_carry, job, carry, piece)
                carry = tasks.add("k", at, next_carry, job, carry, piece)
    chunks = (*x.chunks[:-1], tuple(widths))
    metas = [runner.meta(x.ndim, dt) for dt in dtypes]
    return tasks.arrays(blocks, chunks, metas)


def _outs(piece: Piece) -> tuple[Any, ...]:
    return piece[0]


def _edge_of(piece: Piece) -> tuple[Any, ...]:
    return piece[1]
