"""Rank-2 and rank-3 element functions for the walking kernels (``offload.ptx.passes.walk``):
stencils whose reads of neighbouring rows (planes) a thread computing several makes once,
functions whose branches on the row are boundary tests (walked, checked at run time: the
groups where the rows part take the fallback), and functions the walk must leave alone.
Each closes over its inputs; ``walks`` says whether the pass blocks it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class WalkCase:
    name: str
    fn: Callable[..., Any]
    walks: bool

    def __repr__(self) -> str:
        return self.name


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def conv5(h: int, w: int, seed: int = 0) -> WalkCase:
    """The suite's 2d-convolution: a 5 x 5 window, clamped borders, float32."""
    src = _rng(seed).uniform(-1, 1, (h, w)).astype(np.float32)
    k = (np.arange(25, dtype=np.float32).reshape(5, 5) - 12) / 8

    def conv5(y: int, x: int) -> Any:
        rows, cols = src.shape
        acc = np.float32(0.0)
        for a in range(5):
            yy = min(max(y + a - 2, 0), rows - 1)
            for b in range(5):
                acc += k[a, b] * src[yy, min(max(x + b - 2, 0), cols - 1)]
        return acc

    return WalkCase("conv5", conv5, True)


def cross_wrap(h: int, w: int, seed: int = 1) -> WalkCase:
    """A 5-point cross over float64 with periodic rows (Python's ``%``) and clamped
    columns, returning a tuple (the value and its sign as an int8)."""
    src = _rng(seed).standard_normal((h, w))

    def cross_wrap(y: int, x: int) -> Any:
        rows, cols = src.shape
        up = src[(y - 1) % rows, x]
        down = src[(y + 1) % rows, x]
        left = src[y, max(x - 1, 0)]
        right = src[y, min(x + 1, cols - 1)]
        v = 0.5 * src[y, x] + 0.125 * (up + down + left + right)
        return v, np.int8(1 if v > 0 else -1)

    return WalkCase("cross_wrap", cross_wrap, True)


def column_branch(h: int, w: int, seed: int = 2) -> WalkCase:
    """Integers, and a branch on the column only (every copy of a thread takes it alike)."""
    src = _rng(seed).integers(-100, 100, (h, w)).astype(np.int32)

    def column_branch(y: int, x: int) -> Any:
        rows = src.shape[0]
        above = src[max(y - 1, 0), x]
        below = src[min(y + 1, rows - 1), x]
        if x % 3 == 0:
            return above * 3 - below
        return above + below + src[y, x] // 7

    return WalkCase("column_branch", column_branch, True)


def row_branch(h: int, w: int, seed: int = 3) -> WalkCase:
    """A zero halo on the row: a boundary test (walked; the first and last groups part)."""
    src = _rng(seed).uniform(-1, 1, (h, w)).astype(np.float32)

    def row_branch(y: int, x: int) -> Any:
        rows = src.shape[0]
        if y == 0 or y == rows - 1:
            return np.float32(0.0)
        return src[y - 1, x] + src[y + 1, x]

    return WalkCase("row_branch", row_branch, True)


def interior(h: int, w: int, seed: int = 4) -> WalkCase:
    """``ol.stencil``'s split written by hand: an interior test on both axes, unclamped
    reads inside and clamped ones on the border, int64 (a boundary test)."""
    src = _rng(seed).integers(-1000, 1000, (h, w))

    def interior(y: int, x: int) -> Any:
        rows, cols = src.shape
        if y >= 2 and y < rows - 2 and x >= 1 and x < cols - 1:
            return src[y - 2, x] - 2 * src[y + 2, x] + src[y, x - 1] * src[y, x + 1]
        a = src[max(y - 2, 0), x] - 2 * src[min(y + 2, rows - 1), x]
        return a + src[y, max(x - 1, 0)] * src[y, min(x + 1, cols - 1)]

    return WalkCase("interior", interior, True)


def row_parity(h: int, w: int, seed: int = 5) -> WalkCase:
    """A branch on the row's parity: the rows of every group part (not walked; the arm's
    loop keeps it a branch)."""
    src = _rng(seed).uniform(-1, 1, (h, w))

    def row_parity(y: int, x: int) -> Any:
        if y % 2 == 0:
            acc = 0.0
            for k in range(x):
                acc += src[y, k]
            return acc
        return src[y, x] - 1.0

    return WalkCase("row_parity", row_parity, False)


def row_loaded(h: int, w: int, seed: int = 6) -> WalkCase:
    """A branch on a value loaded at the row: not a boundary test (not walked)."""
    src = _rng(seed).uniform(-1, 1, (h, w)).astype(np.float32)

    def row_loaded(y: int, x: int) -> Any:
        if src[y, 0] > 0:
            acc = np.float32(0.0)
            for k in range(x):
                acc += src[y, k]
            return acc
        return -src[y, x]

    return WalkCase("row_loaded", row_loaded, False)


def cases(h: int, w: int) -> list[WalkCase]:
    return [
        conv5(h, w),
        cross_wrap(h, w),
        column_branch(h, w),
        row_branch(h, w),
        interior(h, w),
        row_parity(h, w),
        row_loaded(h, w),
    ]


def halo7(d: int, h: int, w: int, seed: int = 7) -> WalkCase:
    """The suite's 7pt-stencil: a zero halo on every face (``z == 0 or ... x == nx - 1``,
    short-circuit), float32."""
    src = _rng(seed).uniform(-1, 1, (d, h, w)).astype(np.float32)
    w1, w2 = np.float32(0.25), np.float32(0.125)

    def halo7(z: int, y: int, x: int) -> Any:
        nz, ny, nx = src.shape[0], src.shape[1], src.shape[2]
        if z == 0 or y == 0 or x == 0 or z == nz - 1 or y == ny - 1 or x == nx - 1:
            return np.float32(0.0)
        faces = (
            src[z - 1, y, x] + src[z + 1, y, x]
            + src[z, y - 1, x] + src[z, y + 1, x]
            + src[z, y, x - 1] + src[z, y, x + 1]
        )  # fmt: skip
        return w1 * src[z, y, x] + w2 * faces

    return WalkCase("halo7", halo7, True)


def planes(d: int, h: int, w: int, seed: int = 8) -> WalkCase:
    """Clamped neighbours along every axis, a window loop over the planes, float64 and an
    int32 second result (no branch)."""
    src = _rng(seed).standard_normal((d, h, w))

    def planes(z: int, y: int, x: int) -> Any:
        nz, ny, nx = src.shape
        acc = 0.0
        for a in range(-1, 2):
            acc += src[min(max(z + a, 0), nz - 1), y, x] * (a + 2)
        side = src[z, min(y + 1, ny - 1), x] - src[z, y, max(x - 1, 0)]
        return acc + side, np.int32(z * 7 - y)

    return WalkCase("planes", planes, True)


def plane_steps(d: int, h: int, w: int) -> WalkCase:
    """A loop whose trip count depends on the plane (not walked)."""
    src = np.arange(d * h * w, dtype=np.int64).reshape(d, h, w)

    def plane_steps(z: int, y: int, x: int) -> Any:
        acc = 0
        for k in range(min(z, 3)):
            acc += src[z - k, y, x]
        return acc

    return WalkCase("plane_steps", plane_steps, False)


def cases3(d: int, h: int, w: int) -> list[WalkCase]:
    return [halo7(d, h, w), planes(d, h, w), plane_steps(d, h, w)]
