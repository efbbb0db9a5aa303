"""Rank-1 reductions for the shared-memory staging of GPU kernels in lines of threads
(``offload.ptx.passes.stage``): reads that vary with no index, and windows ``a[i + k + c]``.

Each case is an element function closing over its inputs, a length that is not a multiple
of the simulator's line (8) -- so threads past the edge exist -- and what the pass must
stage: ``uniform`` slots (every thread of the line reads the element) and ``windows``. The
loops run several chunks of the simulator's line with tails; ``long_*`` cases also run
full chunks of the GPU's line (256). Window arrays are as long as the reads need, no
longer, so a staged read past what an element reads would fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class LineCase:
    name: str
    fn: Callable[..., Any]
    n: int
    uniform: int
    """Slots of reads that vary with no index."""
    windows: int
    """Window slots."""

    @property
    def staged(self) -> bool:
        return self.uniform + self.windows > 0

    def __repr__(self) -> str:
        return self.name


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def nbody(n: int, seed: int = 0) -> LineCase:
    """All-pairs accelerations: ``x[j]``, ``y[j]``, ``m[j]`` are read by every thread."""
    rng = _rng(seed)
    x, y, m = (rng.uniform(-1, 1, n).astype(np.float32) for _ in range(3))

    def accel(i):
        ax = np.float32(0.0)
        ay = np.float32(0.0)
        for j in range(len(x)):
            dx = x[j] - x[i]
            dy = y[j] - y[i]
            inv = 1.0 / np.sqrt(dx * dx + dy * dy + np.float32(0.01))
            s = m[j] * inv * inv * inv
            ax += s * dx
            ay += s * dy
        return ax, ay

    return LineCase(f"nbody_{n}", accel, n, 3, 0)


def convolution(n: int, taps: int, seed: int = 1) -> LineCase:
    """1-D correlation: windows of ``re`` and ``im`` and the uniform weights ``w[k]``."""
    rng = _rng(seed)
    re = rng.random(n + taps - 1).astype(np.float32)
    im = rng.random(n + taps - 1).astype(np.float32)
    w = rng.random(taps).astype(np.float32)

    def correlate(t):
        acc_re = np.float32(0.0)
        acc_im = np.float32(0.0)
        for k in range(len(w)):
            r = re[t + k] * w[k]
            i = im[t + k] * w[k]
            acc_re += r - i
            acc_im += r + i
        return acc_re, acc_im

    return LineCase(f"convolution_{n}x{taps}", correlate, n, 1, 2)


def offset_window() -> LineCase:
    """``a[(k + 3) + i]`` and ``b[i + (k - 2)]``: windows with a counter offset either way,
    over a loop that starts at 2; int64 elements."""
    a = np.arange(28 + 26, dtype=np.int64) * 7 - 50  # reads up to a[28 + 25]
    b = np.arange(28 + 21, dtype=np.int64) % 13  # reads up to b[28 + 20]

    def f(i):
        acc = 0
        for k in range(2, 23):
            acc += a[(k + 3) + i] * b[i + (k - 2)]
        return acc

    return LineCase("offset_window", f, 29, 0, 2)


def float64_window() -> LineCase:
    """A double window and a double uniform read, a loop bound from a captured scalar."""
    rng = _rng(3)
    m = 30
    a = rng.random(19 + m).astype(np.float64)
    c = rng.random(m).astype(np.float64)

    def f(i):
        acc = 0.0
        for k in range(m):
            acc = acc * 0.5 + a[i + k] * c[k]
        return acc

    return LineCase("float64_window", f, 19, 1, 1)


def strided_loop() -> LineCase:
    """Step 3: no window (its reads are not neighbours), the uniform read is staged."""
    rng = _rng(4)
    a = rng.random(13 + 60).astype(np.float32)
    w = rng.random(60).astype(np.float32)

    def f(i):
        acc = np.float32(0.0)
        for k in range(0, 60, 3):
            acc += a[i + k] * w[k]
        return acc

    return LineCase("strided_loop", f, 13, 1, 0)


def scaled_index() -> LineCase:
    """``a[2 * i + k]``: not a window of the line (a stride of 2 between elements)."""
    rng = _rng(5)
    a = rng.random(2 * 11 + 40).astype(np.float32)

    def f(i):
        acc = np.float32(0.0)
        for k in range(40):
            acc += a[2 * i + k]
        return acc

    return LineCase("scaled_index", f, 11, 0, 0)


def diverges_before_the_loop() -> LineCase:
    """Threads of a line take different paths to the loop: no barrier may be placed."""
    w = _rng(6).random(40).astype(np.float32)

    def f(i):
        acc = np.float32(0.0)
        if i % 3 == 0:
            for k in range(len(w)):
                acc += w[k]
        return acc

    return LineCase("diverges_before_the_loop", f, 17, 0, 0)


def loop_from_the_element() -> LineCase:
    """``range(i, i + 20)``: the counter depends on the element, nothing is shared."""
    a = _rng(7).random(15 + 20).astype(np.float32)

    def f(i):
        acc = np.float32(0.0)
        for k in range(i, i + 20):
            acc += a[k]
        return acc

    return LineCase("loop_from_the_element", f, 15, 0, 0)


def ints_and_two_lines() -> LineCase:
    """int32 windows, an int32 uniform read, a length of just over two lines."""
    a = (np.arange(17 + 33) % 11).astype(np.int32)
    w = (np.arange(33) % 5 - 2).astype(np.int32)

    def f(i):
        acc = np.int32(0)
        for k in range(len(w)):
            acc += a[i + k] * w[k]
        return acc

    return LineCase("ints_and_two_lines", f, 17, 1, 1)


CASES: list[LineCase] = [
    nbody(21),
    nbody(5),
    convolution(23, 19),
    convolution(3, 40),
    offset_window(),
    float64_window(),
    strided_loop(),
    scaled_index(),
    diverges_before_the_loop(),
    loop_from_the_element(),
    ints_and_two_lines(),
]

LONG_CASES: list[LineCase] = [nbody(700, seed=8), convolution(1000, 600, seed=9)]
"""Full chunks of the GPU's line (256) with tails, several lines."""
