"""Counted-loop element functions over captured arrays, shared by the index-width tests
(each test file captures arrays of its own sizes and values)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np


def correlate(signal: np.ndarray, taps: np.ndarray) -> Callable[[int], Any]:
    """``out[t] = sum(signal[t + k] * taps[k])``: 1d-convolution's loop."""

    def conv1d(t):
        acc = np.float32(0.0)
        for k in range(taps.shape[0]):
            acc += signal[t + k] * taps[k]
        return acc

    return conv1d


def attraction(px: np.ndarray, py: np.ndarray, pz: np.ndarray) -> Callable[[int], Any]:
    """nbody's loop over every other body ``j``, reading ``px[j]``, ``py[j]``, ``pz[j]``."""

    def nbody(i):
        xi, yi, zi = px[i], py[i], pz[i]
        ax = np.float32(0.0)
        for j in range(px.shape[0]):
            dx, dy, dz = px[j] - xi, py[j] - yi, pz[j] - zi
            d2 = dx * dx + dy * dy + dz * dz + np.float32(0.01)
            ax += (dx + dy + dz) / (d2 * np.float32(math.sqrt(d2)))
        return ax

    return nbody
