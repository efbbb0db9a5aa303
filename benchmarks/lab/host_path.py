"""Host time of a warm ``compute_g`` call without a GPU: the launch path against a stand-in
CuPy whose kernels do nothing (device mode; numba compiles the kernels' PTX, nothing runs).

    python -m benchmarks.lab.host_path [--what sum|dotp|scan] [--log2 16]
        [--calls 5000] [--profile]

What it measures is offload's own Python between the call and ``cuLaunchKernel`` (walking
the tree, keying the recorded plan, allocating, packing parameters), which on the GPU host
decides a small collective's time (``acc_host`` measures the same on the real GPU). The
stand-in arrays cost about what CuPy's do to make (a few attribute reads, no device work),
so absolute figures are a guide; before/after on one machine is what it is for.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
import types
from typing import Any

import numpy as np

from tests.ptx.test_launch_fastpath import FakeArray


class _Mem:
    """A device allocation's stand-in: an address, no memory (nothing reads it)."""

    __slots__ = ("ptr", "size")
    _next = [1 << 40]

    def __init__(self, n: int) -> None:
        self.ptr = self._next[0]
        self._next[0] += max(n, 8) + 256
        self.size = n


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous")

    def __init__(self, c: bool, f: bool) -> None:
        self.c_contiguous, self.f_contiguous = c, f


class LightArray:
    """What the runtime reads of a CuPy array, made about as cheaply."""

    __slots__ = ("data", "dtype", "flags", "itemsize", "ndim", "shape", "size", "strides")

    def __init__(
        self, shape: Any, dtype: Any = np.float64, memptr: Any = None, strides: Any = None
    ) -> None:
        dt = np.dtype(dtype)
        if isinstance(shape, int | np.integer):
            shape = (int(shape),)
        shape = tuple(int(s) for s in shape)
        size = 1
        for s in shape:
            size *= s
        if strides is None:
            acc, st = dt.itemsize, []
            for s in reversed(shape):
                st.append(acc)
                acc *= max(s, 1)
            strides = tuple(reversed(st))
        self.shape, self.strides, self.dtype, self.size = shape, tuple(strides), dt, size
        self.itemsize, self.ndim = dt.itemsize, len(shape)
        self.data = memptr if memptr is not None else _Mem(size * dt.itemsize)
        self.flags = _Flags(True, len(shape) <= 1)

    # (what the runtime reads of an output that is not CuPy's: the test stand-in's)
    __cuda_array_interface__ = FakeArray.__cuda_array_interface__

    def reshape(self, *shape: Any) -> LightArray:
        if len(shape) == 1 and isinstance(shape[0], tuple):
            shape = shape[0]
        if -1 in shape:
            known = 1
            for s in shape:
                known *= s if s != -1 else 1
            shape = tuple(self.size // max(known, 1) if s == -1 else s for s in shape)
        return LightArray(shape, self.dtype, self.data)

    def copy(self) -> LightArray:
        return LightArray(self.shape, self.dtype)

    def astype(self, dtype: Any, copy: bool = True) -> LightArray:
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        return LightArray(self.shape, dtype)

    def __getitem__(self, k: Any) -> LightArray:
        return LightArray(np.empty(self.shape, np.uint8)[k].shape, self.dtype, self.data)


def _install() -> dict[str, int]:
    from tests.ptx.test_launch_fastpath import make_cupy

    cp, _ = make_cupy()
    counts = {"launches": 0}

    def launch(*args: Any) -> None:
        counts["launches"] += 1

    cp.ndarray = LightArray
    cp.empty = lambda shape, dtype=float, order="C": LightArray(shape, dtype)
    cp.ascontiguousarray = lambda a, dtype=None: a
    cp.asarray = lambda x: LightArray(np.shape(x), np.asarray(x).dtype)
    cp.cuda.driver = types.SimpleNamespace(launchKernel=launch)
    sys.modules["cupy"] = cp
    from offload.acc.skeletons import rawlaunch
    from offload.runtime import gpu

    gpu.load_cupy.cache_clear()
    gpu.device_info.cache_clear()

    def learn(self: Any, args: Any) -> Any:
        codes = rawlaunch._codes(tuple(self.dispatcher.typeof_pyval(a) for a in args))
        return None if codes is None else rawlaunch.Packed(1, codes)

    rawlaunch.RawLauncher._numba_launch = lambda self, grid, threads, args: None  # type: ignore[method-assign]
    rawlaunch.RawLauncher._learn = learn  # type: ignore[method-assign]
    return counts


def add(a: Any, b: Any) -> Any:
    return a + b


def mul(a: Any, b: Any) -> Any:
    return a * b


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--what", default="sum", choices=("sum", "dotp", "scan", "map", "map-out"))
    ap.add_argument("--log2", type=int, default=16)
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    counts = _install()
    import offload as ol

    ol.config.memory = "device"
    n = 1 << args.log2
    x, y = LightArray(n, np.float32), LightArray(n, np.float32)
    trees = {
        "sum": lambda: ol.fold_all(add, 0.0, x),
        "dotp": lambda: ol.fold_all(add, 0.0, ol.zip_with(mul, x, y)),
        "scan": lambda: ol.scanl1(add, x),
    }
    out = LightArray(n, np.float32)

    def elem(i: int) -> Any:
        return x[i] * np.float32(2.0) + np.float32(1.0)

    def call() -> Any:
        if args.what == "map":
            return ol.compute_g(n, elem)
        if args.what == "map-out":
            return ol.compute_g(n, elem, out=out)
        return ol.compute_g(node)

    node = trees[args.what]() if args.what in trees else None

    for _ in range(3):
        call()
    before = counts["launches"]
    batches = []
    for _ in range(5):  # the least of five batches: a shared machine's other work is noise
        t0 = time.perf_counter()
        for _ in range(args.calls // 5):
            call()
        batches.append((time.perf_counter() - t0) / (args.calls // 5))
    launches = (counts["launches"] - before) / (5 * (args.calls // 5))
    print(
        f"{args.what} 2^{args.log2}: host {min(batches) * 1e6:.1f} us per warm call (least of "
        f"5 batches; median {sorted(batches)[2] * 1e6:.1f}), {launches:g} launches"
    )
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.calls):
            call()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
