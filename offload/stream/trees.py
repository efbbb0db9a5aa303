"""Which streamed collective a ``compute_g`` tree is, and the dispatch to it: a fold
(``offload.stream.collectives``), a scan (``offload.stream.scans``), a permute or scatter,
or a filter (``offload.stream.reorder``), a stencil (``offload.stream.stencils``).
Anything else holding a collective is not streamed: ``StreamUnsupported`` where it
exceeds the budget."""

from __future__ import annotations

from typing import Any

from offload.stream import collectives, reorder, scans, stencils
from offload.stream.collectives import StreamedFold, StreamUnsupported
from offload.stream.plan import Plan
from offload.stream.reorder import StreamedFilter, StreamedPermute
from offload.stream.scans import StreamedScan
from offload.stream.stencils import StreamedStencil

Streamed = StreamedFold | StreamedScan | StreamedPermute | StreamedFilter | StreamedStencil


def recognise(root: object) -> Streamed:
    """``root`` as a tree streaming covers, else ``StreamUnsupported`` saying why."""
    found: Streamed | None = scans.recognise(root)
    if found is None:
        found = reorder.recognise(root)
    if found is None:
        found = stencils.recognise(root)
    return found if found is not None else collectives.recognise(root)


def covered(root: object) -> Streamed | None:
    """``recognise``'s tree, or ``None`` where streaming does not cover ``root``."""
    try:
        return recognise(root)
    except StreamUnsupported:
        return None


def need(st: Streamed) -> int:
    """Device bytes ``st`` unstreamed would take (its host inputs and its result)."""
    if isinstance(st, StreamedFold):
        return collectives.need(st)
    if isinstance(st, StreamedScan):
        return scans.need(st)
    if isinstance(st, StreamedStencil):
        return stencils.need(st)
    return reorder.need(st)


def plan(root: object, rows: int | None = None) -> Plan:
    """The chunks ``compute_g(root)`` (a tree streaming covers) streams its source in."""
    st = recognise(root)
    if isinstance(st, StreamedFold):
        return collectives.plan(root, rows)
    if isinstance(st, StreamedScan):
        return scans.plan(st, rows)
    if isinstance(st, StreamedStencil):
        return stencils.plan(st, rows)
    return reorder.plan(st, rows)


def run(st: Streamed, dtype: Any = None, rows: int | None = None) -> Any:
    """``st`` streamed: host NumPy arrays with the unstreamed ``compute_g``'s bits."""
    if isinstance(st, StreamedFold):
        return collectives.run(st, dtype, rows)
    if isinstance(st, StreamedScan):
        return scans.run(st, dtype, rows)
    if isinstance(st, StreamedStencil):
        return stencils.run(st, dtype, rows)
    return reorder.run(st, dtype, rows)


def maybe_stream(st: Streamed, dtype: Any, limit: int) -> Any:
    """``compute_g`` of the tree ``st`` streamed where the device bytes it would take
    unstreamed exceed ``limit``, else ``None`` (it runs unstreamed)."""
    if need(st) <= limit:
        return None
    return run(st, dtype)
