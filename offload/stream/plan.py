"""How a streamed ``compute_g`` is cut into chunks along the result's leading axis.

Each chunk is a block of whole rows of the result. A captured host array is either
*streamed* (each chunk copies its read window, halo included) or *resident* (its window is
the whole array for every chunk, e.g. ``a[b[i]]`` or a full-row loop: copied once). Device
memory holds the resident arrays once and, per slot of the copy/compute pipeline, one
chunk's windows and results. The chunk is the largest number of rows for which that fits
the budget, and at most what the link moves in ``TARGET_CHUNK_SECONDS`` (enough chunks for
the copies to overlap the kernels; each chunk costs a few launches, so not too many).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.diagnostics import OffloadError
from offload.stream.window import Block, ReadWindows, Window, window_bytes

TARGET_CHUNK_SECONDS = 0.02
"""A chunk's transfer should take about this long at the measured rate (about 1 GB at
53 GB/s): launches and syncs, ~10 us a chunk, then cost well under 1%."""

MIN_CHUNK_BYTES = 1 << 22
"""Chunks are at least this large unless the budget forbids (small data: few chunks)."""


class DoesNotFit(OffloadError):
    """The data a chunk of one row needs does not fit the device memory budget."""

    rule = "stream-budget"


@dataclass(frozen=True)
class Chunk:
    """One chunk: its block of the result and the window of each captured array."""

    block: Block
    windows: dict[int, Window]


@dataclass(frozen=True)
class Plan:
    """Chunks in order, and which host arrays are streamed and which resident."""

    chunks: tuple[Chunk, ...]
    streamed: tuple[int, ...]
    resident: tuple[int, ...]
    slot_bytes: int
    """Device bytes one slot needs at most (windows of streamed arrays and results)."""
    resident_bytes: int

    @property
    def rows(self) -> int:
        """Rows of the largest chunk."""
        return max(hi - lo for (lo, hi), *_ in (c.block for c in self.chunks))


def plan_chunks(  # noqa: PLR0917  (the plan's inputs, each a fact of the call)
    windows: ReadWindows,
    shape: tuple[int, ...],
    values: Sequence[Any],
    host: Sequence[int],
    result_dtypes: Sequence[np.dtype[Any]],
    budget: int,
    *,
    slots: int = 2,
    rate: float | None = None,
    rows: int | None = None,
    granule: int = 1,
    least: int = 1,
    phase: int = 0,
    overlap: tuple[int, int] = (0, 0),
    work: int = 0,
) -> Plan:
    """The chunks of ``shape`` for the captured ``values`` whose positions ``host`` are
    host arrays to move (the others stay where they are), within ``budget`` device bytes.

    ``rate``: the measured host-to-device rate in bytes/s (bounds the chunk size; ``None``
    for no bound); ``rows``: force this many rows per chunk (tests, benchmarks; rounded up
    to what ``granule`` and ``least`` allow). ``granule``: every chunk but the last (and
    the first, with a ``phase``) has a multiple of this many rows, and at least ``least``
    rows (a streamed fold's partials must not straddle chunks:
    ``offload.stream.collectives``); one chunk of every row is always allowed.
    ``phase``: the chunks after the first start at ``phase`` plus a multiple of the rows
    per chunk (a 1-D scan's chunks start at its tree's chunk boundaries:
    ``offload.stream.scans``). ``overlap``: rows each chunk's block also
    takes before and after its own (clipped to the axis; the chunks then overlap, and
    what the caller does with the extra rows is its own). ``work``: device bytes a chunk
    needs per result element beside its results (a collective's buffers). Raises
    ``DoesNotFit``, located at a read of the array that does not fit, when even the
    smallest chunk allowed is over budget."""
    n0 = shape[0]
    rest = [(0, n) for n in shape[1:]]
    row_out = sum(np.dtype(dt).itemsize for dt in result_dtypes) + work
    for n in shape[1:]:
        row_out *= n
    itemsize = {k: np.dtype(values[k].dtype).itemsize for k in host}

    resident = tuple(k for k in host if _always_whole(windows, k, shape))
    streamed = tuple(k for k in host if k not in resident)
    resident_bytes = sum(values[k].nbytes for k in resident)

    def widened(lo: int, hi: int) -> tuple[int, int]:
        return max(0, lo - overlap[0]), min(n0, hi + overlap[1])

    def slot_need(lo: int, hi: int) -> tuple[int, dict[int, Window]]:
        lo, hi = widened(lo, hi)
        wins, _ = windows.of(((lo, hi), *rest))
        need = (hi - lo) * row_out
        need += sum(window_bytes(wins[k], itemsize[k]) for k in streamed)
        return need, wins

    free = budget - resident_bytes
    least = -(-max(least, 1) // granule) * granule

    def allowed(r: int) -> int:
        """``r`` rows per chunk rounded down to an allowed count (0: none is)."""
        if r >= n0:
            return n0
        r -= r % granule
        return r if r >= least else 0

    def smaller(r: int) -> int:
        """The next count to try after ``r`` rows did not fit (0: none is left)."""
        return 0 if r <= least else allowed(max(r // 2, least))

    forced = rows is not None
    if rows is None:
        rows = n0
        if rate is not None:
            per_row = max(1, row_out + sum(values[k].nbytes // max(n0, 1) for k in streamed))
            target = int(max(MIN_CHUNK_BYTES, rate * TARGET_CHUNK_SECONDS))
            rows = min(rows, max(1, target // per_row))
        mid = n0 // 2
        rows = allowed(rows)
        while rows > 0 and slots * slot_need(mid, min(n0, mid + rows))[0] > free:
            rows = smaller(rows)
    else:
        rows = min(n0, -(-max(rows, least) // granule) * granule)
    while rows > 0:
        chunks: list[Chunk] = []
        slot_bytes = 0
        starts = [0, *range(phase % rows + rows if phase % rows else rows, n0, rows)]
        for lo, hi in zip(starts, [*starts[1:], n0], strict=True):
            need, wins = slot_need(lo, hi)
            slot_bytes = max(slot_bytes, need)
            chunks.append(Chunk((widened(lo, hi), *rest), wins))
        if forced or slots * slot_bytes <= free:
            return Plan(tuple(chunks), streamed, resident, slot_bytes, resident_bytes)
        rows = smaller(rows)  # (a chunk near an edge reads more than the middle one)
    raise _does_not_fit(windows, values, resident, streamed, budget, row_out, min(least, n0))


def _always_whole(windows: ReadWindows, k: int, shape: tuple[int, ...]) -> bool:
    """Whether capture ``k``'s window is the whole array for one-row chunks at the start,
    middle and end of the leading axis (then it does not shrink with the chunk: it is
    resident). An array of one row is resident too."""
    whole = tuple((0, n) for n in windows.extents[k])
    if whole[0][1] <= 1:
        return True
    n0 = shape[0]
    rest = tuple((0, n) for n in shape[1:])
    for lo in sorted({0, n0 // 2, max(n0 - 1, 0)}):
        if windows.of(((lo, min(n0, lo + 1)), *rest))[0][k] != whole:
            return False
    return True


def _does_not_fit(  # noqa: PLR0917
    windows: ReadWindows,
    values: Sequence[Any],
    resident: Sequence[int],
    streamed: Sequence[int],
    budget: int,
    row_out: int,
    least: int = 1,
) -> DoesNotFit:
    """The error for data that does not fit even the smallest chunk (``least`` rows),
    located at a read of the largest array that has to be on the device whole (else of
    the largest one)."""
    pick = max(resident or streamed, key=lambda k: values[k].nbytes, default=None)
    span = windows.spans.get(pick) if pick is not None else None
    if pick is not None and pick in resident:
        name = windows.names[pick]
        message = (
            f"streaming: '{name}' ({values[pick].nbytes} bytes) must be on the device whole "
            f"(the reads of it are not bounded by the chunk's rows) and it does not fit the "
            f"device memory budget of {budget} bytes"
        )
        hint = (
            "read it at indices bounded by the leading index (e.g. a[i + 1], not a[b[i]]), "
            "or raise ol.config.device_memory_limit"
        )
    else:
        rows = "one row" if least == 1 else f"{least} rows (the fewest its collective allows)"
        message = (
            f"streaming: {rows} of the result ({least * row_out} bytes) and its inputs do "
            f"not fit the device memory budget of {budget} bytes"
        )
        hint = "raise ol.config.device_memory_limit"
    return DoesNotFit.at(message, span, hint=hint)  # type: ignore[return-value]
