"""Rank-2 reductions for the shared-memory staging of GPU kernels (``offload.ptx.passes.stage``).

Each case is an element function closing over its inputs, a shape whose edges are not
multiples of the tiles (so threads past the edge exist), whether the pass must stage its
loop (``staged``) and whether ``offload.ptx.passes.jam`` must block it (``blocked``). The loops
are long enough for full chunks of the simulator's tile (4) and the GPU's (16), with tails,
except where a case says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class StagedCase:
    name: str
    fn: Callable[..., Any]
    shape: tuple[int, int]
    staged: bool
    """Whether the pass stages this kernel's loop (else it must refuse)."""
    jams: bool | None = None
    """Whether ``offload.ptx.passes.jam`` blocks it too (``None``: where it is staged)."""

    @property
    def blocked(self) -> bool:
        return self.staged if self.jams is None else self.jams

    def __repr__(self) -> str:
        return self.name


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def matmul(n0: int, n1: int, k: int, seed: int = 0) -> StagedCase:
    a = _rng(seed).uniform(-1, 1, (n0, k)).astype(np.float32)
    bt = _rng(seed + 1).uniform(-1, 1, (n1, k)).astype(np.float32)

    def dot(i, j):
        acc = np.float32(0.0)
        for kk in range(a.shape[1]):
            acc += a[i, kk] * bt[j, kk]
        return acc

    return StagedCase(f"matmul_{n0}x{n1}x{k}", dot, (n0, n1), True)


def pairwise_distance() -> StagedCase:
    x = _rng(2).random((7, 41))
    y = _rng(3).random((10, 41))

    def dist(i, j):
        d = 0.0
        for k in range(x.shape[1]):
            t = x[i, k] - y[j, k]
            d += t * t
        return d

    return StagedCase("pairwise_distance_f64", dist, (7, 10), True)


def strided_columns() -> StagedCase:
    """``b[k, j]``: the staged read runs down a column; the loop starts at 1, step 3."""
    a = _rng(4).uniform(-1, 1, (6, 70)).astype(np.float32)
    b = _rng(5).uniform(-1, 1, (70, 9)).astype(np.float32)

    def f(i, j):
        acc = np.float32(0.0)
        for k in range(1, a.shape[1], 3):
            acc += a[i, k] * b[k, j]
        return acc

    return StagedCase("strided_columns", f, (6, 9), True)


def ints_and_broadcast(m: int = 29) -> StagedCase:
    """int32 data, a captured bound, a uniform read ``w[k]`` (not staged) and a tuple."""
    a = _rng(6).integers(-50, 50, (5, 40)).astype(np.int32)
    c = _rng(7).integers(-50, 50, (11, 40)).astype(np.int32)
    w = _rng(8).integers(-3, 4, 40).astype(np.int32)

    def f(i, j):
        s = 0
        hi = -(10**9)
        for k in range(m):
            s += a[i, k] * w[k] + c[j, k]
            hi = max(hi, c[j, k] - a[i, k])
        return s, hi

    return StagedCase(f"ints_and_broadcast_m{m}", f, (5, 11), True)


def negative_indices() -> StagedCase:
    """Python's negative indices: the staged index goes through the wrap-around select."""
    a = _rng(9).random((6, 33)).astype(np.float32)
    b = _rng(10).random((5, 33)).astype(np.float32)

    def f(i, j):
        acc = np.float32(0.0)
        for k in range(1, 33):
            acc += a[i, -k] * b[j, k - 33]
        return acc

    return StagedCase("negative_indices", f, (6, 5), True)


def triangular() -> StagedCase:
    """The trip count depends on the row: threads of a tile would not run alike."""
    a = _rng(11).random((9, 9)).astype(np.float32)
    b = _rng(12).random((6, 9)).astype(np.float32)

    def f(i, j):
        acc = np.float32(0.0)
        for k in range(i + 1):
            acc += a[i, k] * b[j, k]
        return acc

    return StagedCase("triangular", f, (9, 6), False)


def diverges_before_the_loop() -> StagedCase:
    a = _rng(13).random((7, 30)).astype(np.float32)
    b = _rng(14).random((7, 30)).astype(np.float32)

    def f(i, j):
        if i == j:
            return np.float32(0.0)
        acc = np.float32(0.0)
        for k in range(a.shape[1]):
            acc += a[i, k] * b[j, k]
        return acc

    return StagedCase("diverges_before_the_loop", f, (7, 7), False)


def diverges_after_the_loop() -> StagedCase:
    """Every thread runs the first loop alike (staged); the copies of a blocked thread would
    not all run the second (not blocked: a loop is no select)."""
    a = _rng(17).random((10, 23)).astype(np.float32)
    b = _rng(18).random((9, 23)).astype(np.float32)

    def f(i, j):
        acc = np.float32(0.0)
        for k in range(a.shape[1]):
            acc += a[i, k] * b[j, k]
        if i < j:
            for k in range(j):
                acc -= a[i, k]
        return acc

    return StagedCase("diverges_after_the_loop", f, (10, 9), True, jams=False)


def read_depends_on_both() -> StagedCase:
    """``x[i + j, k]`` is the same for no tile row or column: nothing to stage."""
    x = _rng(15).random((20, 25)).astype(np.float32)

    def f(i, j):
        acc = np.float32(0.0)
        for k in range(x.shape[1]):
            acc += x[i + j, k]
        return acc

    return StagedCase("read_depends_on_both", f, (9, 11), False)


def short_loop() -> StagedCase:
    """Fewer iterations than a tile: no full chunk, the original loop runs them all."""
    return matmul(5, 6, 3, seed=16)


CASES: list[StagedCase] = [
    matmul(5, 7, 37),
    matmul(9, 3, 16),
    matmul(1, 1, 64),
    pairwise_distance(),
    strided_columns(),
    ints_and_broadcast(),
    ints_and_broadcast(0),
    negative_indices(),
    triangular(),
    diverges_before_the_loop(),
    diverges_after_the_loop(),
    read_depends_on_both(),
    short_loop(),
]
