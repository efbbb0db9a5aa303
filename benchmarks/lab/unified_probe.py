"""What unified mode's per-call prefetch costs: ``python3 -m benchmarks.lab.unified_probe`` (GPU).

For managed buffers of several sizes, each already resident on the device:

* ``prefetch call``: host time of one ``cudaMemPrefetchAsync`` of the whole buffer;
* ``prefetch+kernel``: prefetch then a read-everything kernel, synchronised (per call);
* ``kernel only``: the same kernel without the prefetch;
* ``pagemap check``: ``offload.runtime.residency.HOST_PAGES.touched`` on the resident buffer,
  and what it says before and after a host read (it should say False, then True);
* after the host has read the whole buffer (its pages migrate to the host):
  ``host-touched, prefetch+kernel`` and ``host-touched, kernel only`` (demand faults).

Medians of ``--repeat`` calls, in microseconds, printed as a Markdown table.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import time
from collections.abc import Callable

import numpy as np

from offload.runtime.residency import HOST_PAGES


def _median_us(
    fn: Callable[[], None], repeat: int, before: Callable[[], None] | None = None
) -> float:
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=21)
    args = ap.parse_args()
    import cupy as cp

    stream = cp.cuda.get_current_stream()
    copy = cp.ElementwiseKernel("float32 x", "float32 y", "y = x", "offload_probe_copy")
    rows = []
    for mib in (1, 16, 64, 256):
        n = mib * (1 << 20) // 4
        mem = cp.cuda.malloc_managed(n * 4)
        host = np.ctypeslib.as_array((ctypes.c_float * n).from_address(mem.ptr))
        host[:] = 1.0
        dev = cp.ndarray((n,), cp.float32, mem)
        sink = cp.empty(n, cp.float32)

        def prefetch() -> None:
            cp.cuda.runtime.memPrefetchAsync(mem.ptr, n * 4, 0, stream.ptr)

        def kernel() -> None:
            copy(dev, sink)
            stream.synchronize()

        def both() -> None:
            prefetch()
            kernel()

        def host_touch() -> None:
            float(host.sum())

        both()
        resident_seen = HOST_PAGES.touched(mem.ptr, n * 4)
        check = _median_us(lambda: (HOST_PAGES.touched(mem.ptr, n * 4), None)[1], args.repeat)
        host_touch()
        touched_seen = HOST_PAGES.touched(mem.ptr, n * 4)
        both()
        call = _median_us(lambda: (prefetch(), stream.synchronize())[0], args.repeat)
        call_async = _median_us(prefetch, args.repeat, before=stream.synchronize)
        resident_both = _median_us(both, args.repeat)
        resident_kernel = _median_us(kernel, args.repeat)
        touched_both = _median_us(both, 7, before=host_touch)
        touched_kernel = _median_us(kernel, 7, before=host_touch)
        rows.append(
            (mib, call_async, call, resident_both, resident_kernel, touched_both, touched_kernel,
             check, f"{resident_seen}/{touched_seen}")
        )  # fmt: skip
    print("| MiB | prefetch call (host) | prefetch + sync | prefetch+kernel | kernel only "
          "| host-touched: prefetch+kernel | host-touched: kernel only | pagemap check "
          "| check says host pages (resident/touched) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join([str(r[0])] + [f"{x:.1f}" for x in r[1:-1]] + [r[-1]]) + " |")


if __name__ == "__main__":
    main()
