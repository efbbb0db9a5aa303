"""Streamed permutes and filters: ``compute_g`` of ``permute``/``scatter`` whose source is
larger than the device memory budget (the result fits it), and of ``filter`` over a
vector larger than the budget, with the bits of the unstreamed call.

The source -- its *producer*, an element tree over host arrays or a host array -- is
computed in chunks of its leading axis by the streamed windowed kernels, in order, and
each chunk goes through the collective's own skeleton (``offload.acc.permute``,
``offload.acc.filter``) on the device:

* ``permute(f, defaults, ix, a)``: the result stays on the device; chunk ``k`` is permuted
  into the result chunk ``k - 1`` left (the first into ``defaults``), its index function
  given the chunk's global indices (``ix(i + lo, ...)``). Every unstreamed combine order
  is reproduced: in the default ``deterministic`` mode (and ``cross_target``) the GPU
  folds each destination's sources in source order (``groups``: ``out[d] = f(a[s],
  out[d])`` for ``s`` ascending), and the chunks come in source order, each continuing
  every destination where the previous left it -- the same combines in the same order;
  integer ``+``/``min``/``max`` use atomics, exact in any order. In ``fast`` mode a float
  combine uses atomics whose order is the threads' (unstreamed too): no two runs need
  agree there, streamed or not. ``scatter``'s indices (a host array) are cut with the
  source.
* ``filter(pred, a)``: each chunk's kept elements, in order, concatenated in chunk order
  on the host: nothing is computed on the elements, so the bits are the unstreamed ones.

``scatter``'s indices may be on the host or on the device (a CuPy array: each chunk's are
a slice of them there), or an element tree over host arrays (computed into a host array
first, streamed). Not streamed (``StreamUnsupported``): a source, defaults or indices
that hold a collective, or that are not on the host; a result that does not fit the
budget is ``DoesNotFit``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from offload.acc.filter import Filter
from offload.acc.graph import needs_scheduler
from offload.acc.permute import Permute, PermuteIndexError, Scatter, run_permute
from offload.acc.skeletons.operands import source_dtypes, source_shape
from offload.acc.values import shape_of
from offload.delayed import Delayed
from offload.frontend import generated
from offload.frontend.nodes import ArrayNode
from offload.stream import calls
from offload.stream import compiled as cache
from offload.stream.collectives import (
    captured_arrays,
    cast,
    device_context,
    producer_of,
    to_host,
    unsupported,
)
from offload.stream.plan import Plan
from offload.stream.window import Block

PERMUTE_WORK = 48
"""Device bytes per source element a permute's chunk needs beside it: its destinations,
their sort keys and order (int64 each, with the sort's scratch), scatter's indices."""
FILTER_WORK = 24
"""Device bytes per element a filter's chunk needs beside it: its flags and their scan
(int64), and the kept elements."""


@dataclass(frozen=True)
class StreamedPermute:
    """A permute or scatter streaming covers (``recognise``)."""

    node: Permute
    producer: ArrayNode
    """The element tree of the source, whose leading axis the chunks cut."""


@dataclass(frozen=True)
class StreamedFilter:
    """A filter streaming covers (``recognise``)."""

    node: Filter
    producer: ArrayNode


def recognise(root: object) -> StreamedPermute | StreamedFilter | None:
    """``root`` as a permute or filter streaming covers; ``None`` where it is neither;
    ``StreamUnsupported`` for one it does not cover, saying why."""
    if isinstance(root, Filter):
        return StreamedFilter(root, producer_of(root.a, "the filter's source"))
    if not isinstance(root, Permute):
        return None
    producer = producer_of(root.a, f"the {root.name}'s source")
    if not shape_of(producer):
        raise unsupported(f"the {root.name}'s source is 0-d")
    defaults = root.defaults
    if isinstance(defaults, ArrayNode) and needs_scheduler(defaults):
        raise unsupported(f"the {root.name}'s defaults hold a collective or shared work")
    if (
        isinstance(root, Scatter)
        and not _indices(root.to)
        and (not isinstance(root.to, ArrayNode) or needs_scheduler(root.to))
    ):
        raise unsupported(
            "the scatter's indices are neither an array nor an element tree over host arrays"
        )
    return StreamedPermute(root, producer)


def _indices(to: object) -> bool:
    """Whether ``scatter``'s indices ``to`` are an array streaming cuts with the source:
    a NumPy array, or one in device memory (cut there, by slicing: no copy)."""
    return type(to) is np.ndarray or (
        hasattr(to, "__cuda_array_interface__") and getattr(to, "ndim", 0) == 1
    )


def _result_bytes(node: Permute) -> int:
    item = sum(dt.itemsize for dt in source_dtypes(node.defaults))
    return item * math.prod(source_shape(node.defaults))


def _index_bytes(node: Permute) -> int:
    """The bytes of the arrays the index function captures (copied to the device whole)."""
    return 0 if isinstance(node, Scatter) else sum(a.nbytes for a in captured_arrays(node.ix))


def _fixed_bytes(sp: StreamedPermute) -> int:
    """Device bytes a streamed permute keeps beside its chunks: the result twice (each
    chunk's permute writes a copy of it) and the index function's captured arrays."""
    return 2 * _result_bytes(sp.node) + _index_bytes(sp.node)


def need(st: StreamedPermute | StreamedFilter) -> int:
    """Device bytes the unstreamed call would take: the source's host inputs, the
    result (a filter's: at most its source's size) and scatter's indices."""
    shape = shape_of(st.producer)
    found = cache.entry(st.producer, len(shape))
    values: list[Any] = found.fetch(st.producer)
    inputs = sum(int(values[k].nbytes) for k in cache.host_arrays(values))
    if isinstance(st, StreamedFilter):
        item = sum(dt.itemsize for dt in source_dtypes(st.node.a))
        return inputs + item * math.prod(shape)
    to = 0
    if isinstance(st.node, Scatter):
        to = math.prod(shape_of(st.node.to)) * source_dtypes(st.node.to)[0].itemsize
    return inputs + to + _result_bytes(st.node) + _index_bytes(st.node)


def _cut(st: StreamedPermute | StreamedFilter) -> calls.Cut:
    if isinstance(st, StreamedFilter):
        return calls.Cut(work=FILTER_WORK)
    return calls.Cut(reserve=_fixed_bytes(st), work=PERMUTE_WORK)


def plan(st: StreamedPermute | StreamedFilter, rows: int | None = None) -> Plan:
    """The chunks the source of ``st`` is streamed in."""
    shape = shape_of(st.producer)
    return calls.plan_for(st.producer, shape, rows=rows, cut=_cut(st))


def run(st: StreamedPermute | StreamedFilter, dtype: Any = None, rows: int | None = None) -> Any:
    """The streamed permute or filter (module docstring): host NumPy arrays, the
    unstreamed ``compute_g``'s bits."""
    shape = shape_of(st.producer)
    ctx = device_context()
    if isinstance(st, StreamedPermute) and isinstance(st.node, Scatter):
        st = replace(st, node=replace(st.node, to=_computed_indices(st.node.to, rows)))
    if 0 in shape:  # (nothing to stream: the unstreamed skeleton over the empty source)
        parts = [np.empty(shape, dt) for dt in source_dtypes(st.node.a)]
        sources = {"a": _pack(parts), **_fixed_sources(st, ctx)}
        if isinstance(st.node, Scatter):
            sources["to"] = st.node.to
        out = to_host(st.node.materialise(ctx, sources))
    else:
        p = calls.prepare(st.producer, shape, None, rows=rows, cut=_cut(st))
        out = _filter(st, p) if isinstance(st, StreamedFilter) else _permute(st, p)
    return out if dtype is None else cast(out, dtype)


def _computed_indices(to: Any, rows: int | None) -> Any:
    """``scatter``'s indices as an array: an element tree over host arrays computed into a
    host array first (streamed: it may be as long as the source), an array as it is."""
    if not isinstance(to, ArrayNode):
        return to
    shape = tuple(shape_of(to))
    if 0 in shape:
        return np.empty(shape, source_dtypes(to)[0])
    return calls.run(to, shape, rows=rows)


def _pack(arrays: Sequence[Any]) -> Any:
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


def _fixed_sources(st: StreamedPermute | StreamedFilter, ctx: Any) -> dict[str, Any]:
    """A permute's defaults as its skeleton takes them (a delayed tree computed)."""
    if isinstance(st, StreamedFilter):
        return {}
    defaults = st.node.defaults
    if isinstance(defaults, Delayed):
        defaults = ctx.compute(defaults, "the permute's defaults")
    return {"defaults": defaults}


def _filter(st: StreamedFilter, p: calls.Prepared) -> Any:
    """Each chunk filtered on the device, the kept elements concatenated in order."""
    ctx = device_context()
    kept: list[list[Any]] = []

    def each(block: Block, results: Sequence[Any]) -> None:
        got = to_host(st.node.materialise(ctx, {"a": _pack(results)}))
        kept.append(list(got) if isinstance(got, tuple) else [got])

    calls.execute(p, each)
    return _pack([np.concatenate(parts) for parts in zip(*kept, strict=True)])


def _permute(st: StreamedPermute, p: calls.Prepared) -> Any:
    """Each chunk permuted, in source order, into the result the previous one left."""
    ctx = device_context()
    node = st.node
    state = _fixed_sources(st, ctx)
    order = _InOrder(p.backend.name)

    def each(block: Block, results: Sequence[Any]) -> None:
        (lo, hi), *_ = block
        order.wait()
        sources = {"a": _pack(results), "defaults": state["defaults"]}
        part = replace(node, a=sources["a"], defaults=sources["defaults"])
        try:
            if isinstance(node, Scatter):
                sources["to"] = node.to[lo:hi]
                state["defaults"] = part.materialise(ctx, sources)
            else:
                ix = _shifted(node.ix, lo, len(block))
                state["defaults"] = run_permute(ctx, part, ix, sources)
        except PermuteIndexError as err:
            raise PermuteIndexError(
                f"{err} (streamed: that source index is its chunk's; add {lo}, the chunk's "
                "first row, to its first coordinate)"
            ) from None
        order.done()

    calls.execute(p, each)
    return to_host(state["defaults"])


class _InOrder:
    """Chunk after chunk on the GPU: each chunk's permute is queued on its own stream of
    the pipeline, after the previous chunk's (which left the result it continues). The
    simulator runs the chunks in order anyway."""

    def __init__(self, backend_name: str) -> None:
        self.cp: Any = None
        if backend_name != "gpu-sim":
            from offload.runtime.gpu import load_cupy

            self.cp = load_cupy()
            self.cp.cuda.Device().synchronize()  # (the defaults, computed on another stream)
        self.event: Any = None

    def wait(self) -> None:
        """Make the current stream wait for the previous chunk's work."""
        if self.cp is not None and self.event is not None:
            self.cp.cuda.get_current_stream().wait_event(self.event)

    def done(self) -> None:
        """Mark the end of this chunk's work on the current stream."""
        if self.cp is not None:
            self.event = self.cp.cuda.get_current_stream().record()


def _shifted(ix: Callable[..., Any], lo: int, rank: int) -> Callable[..., Any]:
    """``ix`` of a chunk's local indices: its global indices are the local ones with
    ``lo`` added to the first (the index function sees what it sees unstreamed)."""
    at = (lo,) + (0,) * (rank - 1)
    made: Callable[..., Any] = generated.shifted(rank)(ix, at)
    return made
