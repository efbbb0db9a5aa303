"""The reduction tree of a long fold, fixed by sizes alone (docs/collectives.md).

A fold of ``rows`` rows of ``n`` elements runs as one element kernel whose element is a
sequential loop over its row, unless the rows are too few to fill the machine and the
rows long: then it runs in stages. Each stage is an ordinary element kernel of shape
``(*rows, p)``: partial ``t`` folds, in order, a part of its row -- the elements
``t, t + p, t + 2p, ...`` (``strided``: neighbouring threads read neighbouring elements,
coalesced on a GPU; only for a combine that commutes) or the ``c`` consecutive elements
from ``t * c`` (``contiguous``: any associative combine) -- and the next stage folds
the partials, until a last sequential fold of at most ``FINAL`` values, fused with
whatever consumes the result.

The tree depends on the sizes, on whether the combine commutes (``commute.py``), on the
determinism mode and (in the default and fast modes) on the kind of target; never on
addresses, timing or the number of threads that happen to run. So a mode gives the same
bits run to run, and ``cross_target`` -- the wide rule on every target -- gives the same
bits on every target.
"""

from __future__ import annotations

from dataclasses import dataclass

WIDE_PARTIALS = 1 << 18
"""The wide rule's parallel partials (all rows together) in a first stage: enough threads
to keep a GPU's memory system busy, each folding a long run of elements. About the
resident threads of an H100 (132 SMs x 2048): on an H200, sum over 2^28 float32 took
605 us with 2^16 partials, 384 with 2^17, 320 with 2^18 and 322 with 2^19, against
cupy.sum's 269 (``benchmarks/lab/acc_sweep.py``)."""
WIDE_CHUNK = 64
"""The least elements a wide partial folds (later stages: the partials of the previous)."""
FINAL = 64
"""The most values the last, sequential fold of a tree reads."""
WIDE_ROWS = 1 << 14
"""Rows that already keep a GPU busy: a fold of at least this many rows gets no tree; its
long rows (``WIDE_ROW_MIN`` elements) are read by ``WIDE_ROW_LANES`` neighbouring
threads each (a commuting combine), so that a warp reads consecutive elements."""
WIDE_ROW_LANES = 32
WIDE_ROW_MIN = 8 * WIDE_ROW_LANES
SEG_LANES = 32
"""The most threads that share a segment of a wide segmented fold (a commuting combine):
a power of two at most an eighth of the mean segment length."""

CPU_PARTIALS = 256
"""The CPU rule's partials per row: enough for every core, few enough to fold at once."""
CPU_CHUNK = 1 << 13
"""The least elements a CPU partial folds."""
CPU_ROWS = 64
"""Rows that already keep the CPU's cores busy."""
CPU_LANES = 4
"""Accumulators of a CPU partial (a fold from a number ``z``): four independent chains
cover a float add's four-cycle latency (eight were a little faster but compiled about
three times slower)."""

MODES = ("deterministic", "cross_target", "fast")


@dataclass(frozen=True)
class Stage:
    """One stage of a reduction tree: ``p`` partials per row, each of ``c`` elements
    (``strided``: every ``p``-th element, ``c`` at most)."""

    n: int
    """Elements per row that this stage folds."""
    p: int
    c: int
    strided: bool
    lanes: int = 1
    """Accumulators a contiguous partial keeps (``CPU_LANES``): its run is cut into
    ``lanes`` equal sub-runs folded in lockstep -- independent dependency chains, so a
    CPU core overlaps them -- the remainder joining the last, then the sub-runs' results
    folded in order (associativity only)."""


def stages(
    rows: int, n: int, *, wide: bool, commutes: bool, lanes: bool = True
) -> tuple[Stage, ...]:
    """The stages before the last sequential fold of ``rows`` rows of ``n`` elements
    (empty: one sequential fold per row). ``wide``: the GPU's rule (used by every target
    in ``cross_target`` mode), else the CPU's; ``lanes``: CPU partials may keep
    ``CPU_LANES`` accumulators (a fold from one number: ``fold1`` has no neutral element
    to start them from, and a tuple accumulator's lanes compiled too slowly)."""
    out: list[Stage] = []
    if wide:
        if rows >= WIDE_ROWS:
            if not commutes or n < WIDE_ROW_MIN:
                return ()
            c = -(-n // WIDE_ROW_LANES)
            return (Stage(n, -(-n // c), c, True),)
        while n > FINAL:
            p = max(1, min(-(-n // WIDE_CHUNK), WIDE_PARTIALS // max(rows, 1)))
            if p == 1:
                break
            c = -(-n // p)
            p = -(-n // c)
            out.append(Stage(n, p, c, commutes))
            n = p
        return tuple(out)
    if rows >= CPU_ROWS or n < 2 * CPU_CHUNK:
        return ()
    p = min(CPU_PARTIALS, n // CPU_CHUNK)
    c = -(-n // p)
    p = -(-n // c)
    return (Stage(n, p, c, False, CPU_LANES if lanes else 1),)


def wide_rule(backend_name: str, determinism: str) -> bool:
    """Whether a target uses the wide (GPU) rule: the GPU and its simulator always, every
    target in ``cross_target`` mode."""
    if determinism not in MODES:
        raise ValueError(f"determinism must be one of {', '.join(MODES)}, got {determinism!r}")
    return determinism == "cross_target" or backend_name.startswith("gpu")


def seg_lanes(segments: int, n: int, *, wide: bool, commutes: bool) -> int:
    """Threads per segment of a segmented fold of ``segments`` segments holding ``n``
    elements in all: 1 (a sequential loop per segment) on the CPU and for a combine that
    does not commute, else a power of two up to ``SEG_LANES`` -- lane ``t`` folds the
    segment's elements ``t, t + lanes, ...`` -- then a fold over the lanes."""
    if not (wide and commutes) or segments == 0:
        return 1
    lanes = 1
    while lanes < SEG_LANES and 2 * lanes * 8 <= n // segments:
        lanes *= 2
    return lanes
