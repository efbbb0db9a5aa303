"""Rank-2 element functions for the walking kernels (``offload.ptx.passes.walk``): stencils
whose reads of neighbouring rows a thread computing several rows makes once, and functions
the walk must leave alone. Each closes over its inputs; ``walks`` says whether the pass
blocks it."""

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
    """A branch on the row: the copies could take different paths (not walked)."""
    src = _rng(seed).uniform(-1, 1, (h, w)).astype(np.float32)

    def row_branch(y: int, x: int) -> Any:
        rows = src.shape[0]
        if y == 0 or y == rows - 1:
            return np.float32(0.0)
        return src[y - 1, x] + src[y + 1, x]

    return WalkCase("row_branch", row_branch, False)


def cases(h: int, w: int) -> list[WalkCase]:
    return [conv5(h, w), cross_wrap(h, w), column_branch(h, w), row_branch(h, w)]
