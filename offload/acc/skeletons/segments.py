"""Segment descriptors (Accelerate's: a 1-D array of segment lengths) validated and laid
out for a segmented scan.

A segmented scan is a plain scan of (head flag, value) pairs, whatever the segments'
lengths (so short segments cost what long ones do). For ``scanl_seg`` every segment
gets its neutral element in front: the scanned sequence has ``n + len(seg)`` positions,
segment ``s`` starting at ``start[s] + s``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.acc.skeletons.build import host


@dataclass(frozen=True)
class SegmentLayout:
    length: int
    """Positions of the scanned sequence."""
    heads: Any
    """Positions that start a segment (the neutral element's, with one)."""
    dest: Any
    """Position of each source element (only with neutral elements; else ``None``)."""


def validated_lengths(seg: Any, n: int, what: str, xp: Any = np) -> Any:
    """The segment lengths as int64, an array of module ``xp`` (a device array on the
    GPU: its layout is computed there): 1-D, non-negative, summing to ``n``."""
    lengths = host(seg) if xp is np else xp.asarray(seg)
    if lengths.ndim != 1:
        raise ValueError(f"{what}: segment lengths are a 1-D array, not shape {lengths.shape}")
    if lengths.dtype.kind not in "iu":
        raise TypeError(f"{what}: segment lengths are integers, not {lengths.dtype}")
    lengths = lengths.astype(np.int64)
    if lengths.size and bool((lengths < 0).any()):
        raise ValueError(f"{what}: segment lengths must be >= 0 (found {int(lengths.min())})")
    total = int(lengths.sum())
    if total != n:
        raise ValueError(
            f"{what}: the segment lengths sum to {total} but the innermost axis has {n} elements"
        )
    return lengths


def segment_layout(seg: Any, n: int, with_z: bool, what: str, xp: Any) -> SegmentLayout:
    """Where segments start in the scanned sequence (arrays of module ``xp``, computed by
    ``xp``: on the GPU no per-element work or copy on the host)."""
    lengths = validated_lengths(seg, n, what, xp)
    ends = xp.cumsum(lengths)
    starts = ends - lengths
    if not with_z:
        return SegmentLayout(n, starts[lengths > 0], None)
    k = xp.arange(len(lengths), dtype=np.int64)
    heads = starts + k
    i = xp.arange(n, dtype=np.int64)
    if xp is np:
        seg_of = np.repeat(k, lengths)
    else:  # (CuPy's repeat takes no array of counts) the segment ends at or before i
        seg_of = xp.searchsorted(ends, i, side="right").astype(np.int64)
    return SegmentLayout(n + len(lengths), heads, i + seg_of + 1)
