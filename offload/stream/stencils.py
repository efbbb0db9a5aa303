"""Streamed stencils: ``compute_g`` of ``stencil(fn, a, boundary)`` over host arrays larger
than the device memory budget, with the bits of the unstreamed call.

A stencil is an element function of its source: the element at ``i`` reads the source at
``i + d`` for the constant offsets ``d`` (``extent``), the boundary rule mapping a read
outside the array back into it. So it streams as any element function does: the chunks
cut the leading axis and each chunk's kernel reads a window of the source rows, halo
included, that the range analysis finds from the lowered reads (``stream.window``; the
array's extents, captured integers, are constants there). Clamp, mirror and constant
boundaries read near an edge of the leading axis only rows near that edge, so every
chunk's window is its rows and its halo. A wrap does not: the first rows read the last
ones. Its chunks are computed with the leading axis clamped instead (``Stencil.lead``:
the same values wherever a read stays inside the array), and the rows whose reads cross
an end of the leading axis -- ``-lo`` rows at the top and ``hi`` at the bottom, for the
offsets ``lo <= 0 <= hi`` along it -- are computed again apart: their source rows (the
wrapped ones included) are gathered into a small array, the stencil runs over it
unstreamed, and its rows replace theirs.

The source -- a host array, or an element tree over host arrays (``map``, ``zip_with``,
...) -- is computed inside the chunk's kernel at each read (the unstreamed call computes
it once into an array: the same values). A source that holds a collective, a stencil or
shared work is computed first, part by part (``offload.stream.composite``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from offload.acc.graph import compute as compute_graph
from offload.acc.nodes import as_source
from offload.acc.skeletons.operands import source_dtypes
from offload.acc.stencil import Stencil
from offload.acc.values import Item, shape_of, to_items
from offload.delayed import backpermute
from offload.frontend.nodes import ArrayNode
from offload.stream import calls
from offload.stream import compiled as cache
from offload.stream.collectives import device_context, producer_of, to_host, unsupported
from offload.stream.plan import Plan


@dataclass(frozen=True)
class StreamedStencil:
    """A stencil streaming covers (``recognise``)."""

    node: Stencil
    producer: ArrayNode
    """The stencil's source as an element tree (a host array as a ``Leaf``)."""

    @property
    def target(self) -> Stencil:
        """The stencil the chunks compute: ``node`` over ``producer``, its leading axis
        clamped where ``node`` wraps it (module docstring)."""
        node = replace(self.node, a=self.producer)
        return replace(node, lead="clamp") if self.wraps else node

    @property
    def wraps(self) -> bool:
        """Whether some row reads across an end of the leading axis under a wrap."""
        return self.node.boundary == "wrap" and self.node.extent[0] != (0, 0)


def recognise(root: object) -> StreamedStencil | None:
    """``root`` as a stencil streaming covers; ``None`` where it is no stencil;
    ``StreamUnsupported`` for one it does not cover, saying why."""
    if not isinstance(root, Stencil):
        return None
    if root.lead is not None:
        raise unsupported("its stencil is already a streamed chunk's")
    return StreamedStencil(root, producer_of(root.a, "the stencil's source"))


def need(st: StreamedStencil) -> int:
    """Device bytes the unstreamed call would take: the source's host inputs and the
    result."""
    shape = shape_of(st.producer)
    found = cache.entry(st.producer, len(shape))
    values: list[Any] = found.fetch(st.producer)
    inputs = sum(int(values[k].nbytes) for k in cache.host_arrays(values))
    item = sum(dt.itemsize for dt in source_dtypes(st.node.a))
    return inputs + 2 * item * math.prod(shape)  # (the source materialised, the result)


def plan(st: StreamedStencil, rows: int | None = None) -> Plan:
    """The chunks ``compute_g`` of the stencil streams in."""
    return calls.plan_for(st.target, st.node.shape, rows=rows)


def run(st: StreamedStencil, dtype: Any = None, rows: int | None = None) -> Any:
    """The streamed stencil (module docstring): host NumPy arrays, the unstreamed
    ``compute_g``'s bits."""
    shape = st.node.shape
    out = calls.run(st.target, shape, dtype, rows=rows)
    if st.wraps and 0 not in shape:
        outs = list(out) if isinstance(out, tuple) else [out]
        lo, hi = st.node.extent[0]
        n = shape[0]
        for first, last in ((0, min(-lo, n)), (max(n - hi, 0), n)):
            if first < last:
                edge = _edge_rows(st, first, last, dtype)
                for o, e in zip(outs, edge, strict=True):
                    o[first:last] = e
    return out


def _edge_rows(st: StreamedStencil, first: int, last: int, dtype: Any) -> list[Any]:
    """Rows ``[first, last)`` of the wrapped stencil, computed unstreamed over their
    source rows gathered (wrapped ones included) into a small host array."""
    lo, hi = st.node.extent[0]
    n = st.node.shape[0]
    wanted = [p % n for p in range(first + lo, last + hi)]
    parts: list[list[Any]] = []
    start = 0
    while start < len(wanted):  # (runs of consecutive source rows, each computed once)
        stop = start + 1
        while stop < len(wanted) and wanted[stop] == wanted[stop - 1] + 1:
            stop += 1
        parts.append(_source_rows(st, wanted[start], stop - start))
        start = stop
    window = [np.concatenate(cols, axis=0) for cols in zip(*parts, strict=True)]
    source = window[0] if len(window) == 1 else tuple(window)
    dims = to_items(window[0].shape, "the shape")
    assert isinstance(dims, Item)
    small = replace(st.node, a=as_source(source), dims=dims)
    got = to_host(compute_graph(device_context(), small, dtype, None))
    got = list(got) if isinstance(got, tuple) else [got]
    return [g[-lo : -lo + last - first] for g in got]


def _source_rows(st: StreamedStencil, start: int, count: int) -> list[Any]:
    """Source rows ``[start, start + count)`` as host arrays (one per component)."""
    rest = st.node.shape[1:]
    shifted = backpermute((count, *rest), _shift(start, len(rest)), st.producer)
    got = calls.run(shifted, (count, *rest))
    return list(got) if isinstance(got, tuple) else [got]


def _shift(start: int, more: int) -> Any:
    """The index function of rows ``start, start + 1, ...`` of a source of rank
    ``more + 1``."""
    if more == 0:
        return lambda i: (i + start,)
    if more == 1:
        return lambda i, j: (i + start, j)
    return lambda i, j, k: (i + start, j, k)
