"""Timers (CPU wall clock, CUDA events) and summary statistics."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Stats:
    """Median and spread of repeated timings, in seconds."""

    median: float
    min: float
    max: float
    q1: float
    q3: float
    n: int

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def summarise(samples: list[float]) -> Stats:
    """Median, min/max and interquartile range."""
    s = sorted(samples)
    if len(s) >= 4:
        q = statistics.quantiles(s, n=4)
        q1, q3 = q[0], q[2]
    else:
        q1, q3 = s[0], s[-1]
    return Stats(statistics.median(s), s[0], s[-1], q1, q3, len(s))


def gpu_sync() -> None:
    """Wait for the GPU (no-op without CuPy)."""
    try:
        import cupy
    except ImportError:
        return
    cupy.cuda.Device().synchronize()


def time_cpu(fn: Callable[[], Any], repeat: int) -> list[float]:
    """Wall-clock seconds of ``repeat`` calls."""
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def time_gpu(fn: Callable[[], Any], repeat: int) -> list[float]:
    """CUDA-event seconds of ``repeat`` calls (events on the current stream; the legacy
    default stream orders them against every blocking stream a library launches on)."""
    import cupy

    out = []
    for _ in range(repeat):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        gpu_sync()
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return out


def time_once(fn: Callable[[], Any], on_gpu: bool) -> tuple[float, Any]:
    """Wall-clock seconds of one call (synchronised on the GPU) and its result."""
    if on_gpu:
        gpu_sync()
    t0 = time.perf_counter()
    res = fn()
    if on_gpu:
        gpu_sync()
    return time.perf_counter() - t0, res
