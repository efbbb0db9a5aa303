"""``permute(f, defaults, ix, a)`` and ``scatter(to, defaults, a)`` over Dask arrays.

``compute_s`` combines the source elements into a copy of ``defaults`` in row-major
order: ``out[d] = f(a[i], out[d])``. Here each non-empty block of ``a`` (and of ``to``)
is permuted by offload on the worker, its index function seeing global indices (the
block's offset added, ``generated.shifted``):

* the first block, into ``defaults`` itself: for that block's elements, ``compute_s``'s
  combines, bit for bit;
* every later block, into a *partial*: per cell, the elements of that block that reach
  it combined in order (``wrappers.marked``), and a mask of the cells reached;
* the partials are merged in block order by a tree fixed by the chunks and
  ``split_every`` (as the folds' trees): groups of consecutive partials, earlier into
  later, level after level. Merging an earlier partial ``E`` with a later ``L``: a cell
  only ``L`` reached takes ``L``'s value, one both reached ``f(L, E)`` (an offload
  permute of those cells; ``scatter``'s later value wins), and the mask is the union.

``defaults`` enters once, in the first block, and a cell no element reaches keeps its
default. By associativity the merged value is ``compute_s``'s: the same bits where the
combine is exact (integers, ``scatter``); float combines are grouped by block, so they
differ from ``compute_s`` by rounding only, and not from run to run for one chunking.
Blocks are taken in row-major block order, which is the elements' order only where the
axes after the first are one chunk each: a source cut along them is rechunked so,
unless ``f`` commutes (``offload.acc.commute``). The result is chunked as ``defaults``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.acc.combine import compile_combine, compile_index_function, result_error
from offload.acc.commute import commutes
from offload.acc.permute import Permute, PermuteIndexError, Scatter, check_index_results, scatter
from offload.dask.runtime import Runner, block_source, canonical, job_token, xp_of
from offload.dask.sources import Sources, collect
from offload.dask.tasks import Key, Static, Tasks, block_key, grid
from offload.dask.wrappers import kept, marked, same_index, set_offset
from offload.frontend.generated import shifted
from offload.stream.fold import SPLIT_EVERY

Values = tuple[Any, ...]
Partial = tuple[Values, Any]
"""A block's result: its arrays (one per component) and the mask of the cells its
elements reached (``None``: every cell holds its final value, ``defaults`` included)."""


@dataclass(frozen=True)
class PermuteJob:
    """What a permute's tasks share (pickled into each task; ``runtime.canonical``)."""

    token: str
    f: Callable[..., Any]
    ix: Callable[..., Any] | None
    """The index function, or ``None`` for ``scatter`` (its ``to`` blocks are a source)."""
    name: str
    shape: tuple[int, ...]
    """The result's shape."""
    dtypes: tuple[str, ...]
    """The result's dtypes (the defaults')."""
    runner: Runner
    sources: Sources

    def functions(self) -> tuple[object, ...]:
        return (self.f,) if self.ix is None else (self.f, self.ix)


def permute_first(job: PermuteJob, at: Static, defaults: list[Any], *blocks: Any) -> Partial:
    """The first block permuted into the whole of ``defaults`` (a worker task);
    ``blocks``: ``to``'s block then the source's for a scatter, else the source's."""
    job = canonical(job)
    if job.ix is None:
        to, *src = blocks
        node: Permute = scatter(to, block_source(defaults), block_source(src))
    else:
        ix = _shifted(job, at.value)
        node = Permute(job.f, block_source(defaults), ix, block_source(blocks), job.name)
    return _run(job, node, at), None


def permute_partial(job: PermuteJob, at: Static, *blocks: Any) -> Partial:
    """A later block permuted into a partial result and its mask (a worker task)."""
    job = canonical(job)
    xp = xp_of(blocks[-1])
    empty = [xp.zeros(job.shape, np.dtype(d)) for d in job.dtypes]
    empty.append(xp.zeros(job.shape, np.bool_))
    reached = xp.ones(blocks[-1].shape, np.bool_)
    node: Permute
    if job.ix is None:
        to, *src = blocks
        node = scatter(to, block_source(empty), block_source([*src, reached]))
    else:
        ix = _shifted(job, at.value)
        f = kept((job.token, "marked"), lambda: marked(len(job.dtypes))(job.f))
        node = Permute(f, block_source(empty), ix, block_source([*blocks, reached]), job.name)
    *values, mask = _run(job, node, at)
    return tuple(values), mask


def _shifted(job: PermuteJob, at: tuple[int, ...]) -> Callable[..., Any]:
    """This thread's ``shifted`` wrapper of ``job``'s index function at offset ``at``."""
    ix = job.ix
    assert ix is not None
    return set_offset(kept((job.token, "ix"), lambda: shifted(len(at))(ix, at)), at)


def _run(job: PermuteJob, node: Permute, at: Static) -> Values:
    try:
        return job.runner.run(node)
    except PermuteIndexError as err:
        raise PermuteIndexError(
            f"{err.message} [offload.dask: the source index counts from the start of the "
            f"Dask block at {at.value}]"
        ) from None


def merge_partials(job: PermuteJob, parts: list[Partial]) -> Partial:
    """Consecutive partials merged in block order, each earlier one into the next (a
    worker task; the module docstring)."""
    job = canonical(job)
    merged = parts[0]
    for later in parts[1:]:
        merged = _merge(job, merged, later)
    return merged


def _merge(job: PermuteJob, earlier: Partial, later: Partial) -> Partial:
    (old, old_mask), (new, new_mask) = earlier, later
    xp = xp_of(new_mask)
    both = new_mask if old_mask is None else old_mask & new_mask
    out = [xp.where(new_mask, n, o) for n, o in zip(new, old, strict=True)]
    if job.ix is not None and bool(both.any()):  # (a scatter's later value wins: done)
        cells = xp.nonzero(both.reshape(-1))[0]
        pick = [o.reshape(-1)[cells] for o in old]
        put = [n.reshape(-1)[cells] for n in new]
        node = Permute(job.f, block_source(pick), same_index, block_source(put), job.name)
        for o, value in zip(out, job.runner.run(node), strict=True):
            o.reshape(-1)[cells] = value
    mask = None if old_mask is None else old_mask | new_mask
    return tuple(out), mask


def cut_result(part: Partial, cut: Static) -> Values:
    """One block of the result: a slice of the merged partial (a worker task)."""
    values, mask = part
    assert mask is None, "the first partial holds the defaults: every cell is final"
    return tuple(v[cut.value] for v in values)


def check_permute(node: Permute, rank: int, dtypes: tuple[np.dtype[Any], ...]) -> None:
    """The functions of a permute checked and lowered on the client, so that their errors
    are raised while the graph is built, located (as ``compute_s`` raises them)."""
    what = f"{node.name}'s combine function"
    sf = compile_combine(node.f, (dtypes, dtypes), "ol_comb", what)
    if len(sf.result_dtypes) != len(dtypes):
        raise result_error(
            node.f, f"{what} returns {len(sf.result_dtypes)} value(s), not {len(dtypes)}"
        )
    if isinstance(node, Scatter):
        return
    ixf = compile_index_function(node.ix, rank, "ixf", f"{node.name}'s index function")
    check_index_results(node.ix, ixf, len(node.shape), node.name)
    # the wrappers the tasks compile around them
    compile_index_function(shifted(rank)(node.ix, (0,) * rank), rank, "ixf", "shifted")
    marked_dtypes = (*dtypes, np.dtype(np.bool_))
    compile_combine(marked(len(dtypes))(node.f), (marked_dtypes,) * 2, "ol_comb", "marked")


def permute_tree(
    a: Sequence[Any],
    defaults: Sequence[Any],
    node: Permute,
    runner: Runner,
    *,
    split_every: int = SPLIT_EVERY,
    to: Any = None,
) -> list[Any]:
    """``node`` (its functions and flags, not its sources) over the Dask arrays ``a`` (the
    source's components, chunked alike) into ``defaults`` (the defaults' components,
    chunked alike); ``to``: a scatter's Dask array of destinations. One Dask array per
    result component, chunked as ``defaults``."""
    if split_every < 2:
        raise ValueError(f"split_every must be >= 2, got {split_every}")
    x = a[0]
    dtypes = tuple(np.dtype(d.dtype) for d in defaults)
    check_permute(node, x.ndim, dtypes)
    if x.ndim >= 2 and any(len(c) > 1 for c in x.chunks[1:]) and not commutes(node.f):
        # row-major block order is the elements' order only with whole trailing axes
        a = [c.rechunk(dict.fromkeys(range(1, x.ndim), -1)) for c in a]
        x = a[0]
    sources = list(a)
    if to is not None:
        to = to if to.chunks == x.chunks else to.rechunk(x.chunks)
        sources.insert(0, to)
    whole = [d.rechunk(-1) if d.ndim else d for d in defaults]
    tasks = Tasks(node.name, [*sources, *whole])
    ix = None if to is not None else node.ix
    names = tuple(d.str for d in dtypes)
    shape = tuple(int(n) for n in defaults[0].shape)
    token = job_token("permute", node.f, ix, node.name, shape, names, runner)
    job = PermuteJob(token, node.f, ix, node.name, shape, names, runner, collect(node.f, ix))
    starts = [np.concatenate([[0], np.cumsum(c)]).astype(int).tolist() for c in x.chunks]
    level: list[Key] = []
    for at in grid(x.numblocks):
        if any(x.chunks[k][b] == 0 for k, b in enumerate(at)):
            continue
        offset = Static(tuple(starts[k][b] for k, b in enumerate(at)))
        keys = [block_key(c, at) for c in sources]
        if level:
            level.append(tasks.add("part", at, permute_partial, job, offset, *keys))
        else:
            whole_keys = [block_key(d, (0,) * d.ndim) for d in whole]
            level.append(tasks.add("first", at, permute_first, job, offset, whole_keys, *keys))
    if not level:  # no element: the defaults, as compute_s copies them
        return list(defaults)
    depth = 0
    while len(level) > 1:
        depth += 1
        level = [
            tasks.add(f"m{depth}", (g,), merge_partials, job, level[k : k + split_every])
            for g, k in enumerate(range(0, len(level), split_every))
        ]
    out_chunks = defaults[0].chunks
    bounds = [np.concatenate([[0], np.cumsum(c)]).astype(int).tolist() for c in out_chunks]
    blocks: dict[tuple[int, ...], Key] = {}
    for at in grid([len(c) for c in out_chunks]):
        cut = tuple(slice(bounds[k][b], bounds[k][b + 1]) for k, b in enumerate(at))
        blocks[at] = tasks.add("out", at, cut_result, level[0], Static(cut))
    metas = [runner.meta(len(shape), dt) for dt in dtypes]
    return tasks.arrays(blocks, out_chunks, metas)
