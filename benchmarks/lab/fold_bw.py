"""``fold_all`` (sum of float32) against ``cupy.sum`` (CUB) across sizes, GPU only.

    python -m benchmarks.lab.fold_bw [--sizes 16,20,24,28] [--repeat 30]

Per size (powers of two): offload's ``compute_g(fold_all(add, 0.0, x))`` (the node built
once, as a loop reuses it, and built anew each call, as ``cccl_peers`` does) and
``cupy.sum`` -- the median µs per call by CUDA events around the call (host work before
the kernel counts, as a user sees it) and the bandwidth that implies (bytes of ``x`` over
the time), then both pipelined: ``4 x repeat`` calls back to back and one synchronise,
per call (the larger of host and device time per call: for a large input the kernels'
own time). Device mode, CuPy inputs.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.lab.cccl_peers import _time


def _pipelined(cp: Any, fn: Callable[[], Any], calls: int) -> float:
    """µs per call of ``calls`` back-to-back calls (one synchronise at the end): the
    larger of the host time per call and the device time per call."""
    fn()
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    cp.cuda.Device().synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def add(a: Any, b: Any) -> Any:
    return a + b


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="16,20,24,28")
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    import cupy as cp

    import offload as ol

    ol.config.memory = "device"
    rng = np.random.default_rng(0)
    print(
        "| n | fold_all (node kept) µs | fold_all (new node) µs | cupy.sum µs | ratio "
        "| GB/s offload | GB/s cupy | pipelined fold_all µs | pipelined cupy.sum µs |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for e in (int(s) for s in args.sizes.split(",")):
        n = 1 << e
        x = cp.asarray(rng.uniform(-1, 1, n).astype(np.float32))
        node = ol.fold_all(add, 0.0, x)
        kept = _time(cp, lambda node=node: ol.compute_g(node), args.repeat)
        new = _time(cp, lambda x=x: ol.compute_g(ol.fold_all(add, 0.0, x)), args.repeat)
        ref = _time(cp, lambda x=x: cp.sum(x), args.repeat)
        p_kept = _pipelined(cp, lambda node=node: ol.compute_g(node), 4 * args.repeat)
        p_ref = _pipelined(cp, lambda x=x: cp.sum(x), 4 * args.repeat)
        got, want = float(ol.compute_g(node)), float(cp.sum(x.astype(cp.float64)))
        assert abs(got - want) <= 1e-3 * float(cp.sum(cp.abs(x))), (got, want)
        gb = 4 * n / 1e3
        print(
            f"| 2^{e} | {kept:.1f} | {new:.1f} | {ref:.1f} | {kept / ref:.2f}x "
            f"| {gb / kept:.0f} | {gb / ref:.0f} | {p_kept:.1f} | {p_ref:.1f} |"
        )
        del x, node


if __name__ == "__main__":
    main()
