"""Collective tuning constants swept on the GPU (device mode), warm calls timed by events.

    python -m benchmarks.lab.acc_sweep

The fold's first-stage partials (``plan.WIDE_PARTIALS``) on sum and dotp, and the scan's
one-block tail limit (``scan_job.TAIL_MAX``) on prefix-sum, at quick and paper sizes: the
figures behind the constants' values (docs/collectives.md).
"""

from __future__ import annotations

import importlib
import statistics
from typing import Any

from benchmarks.lab.acc_trace import MODULES, event_times, on_device


def timed(cp: Any, call: Any, repeat: int = 15) -> float:
    return statistics.median(event_times(cp, call, repeat))


def main() -> None:
    import cupy as cp

    import offload as ol
    from offload.acc import plan, scan_job

    ol.config.memory = "device"
    bound = {}
    for name in ("sum", "dotp", "prefix-sum"):
        bench = importlib.import_module(f"benchmarks.suite.{MODULES[name]}").BENCHMARK
        for size in ("quick", "paper"):
            b = bench.bind(on_device(cp, bench.make_inputs(bench.sizes[size])))
            bound[name, size] = b
    for wide in (1 << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 18, 1 << 19):
        plan.WIDE_PARTIALS = wide
        for chunk in (16, 64, 256):
            plan.WIDE_CHUNK = chunk
            cells = [
                f"{name} {size} {timed(cp, lambda b=bound[name, size]: b.run(ol.compute_g)):8.1f}"
                for name in ("sum", "dotp")
                for size in ("quick", "paper")
            ]
            print(
                f"WIDE_PARTIALS={wide:7d} WIDE_CHUNK={chunk:4d}: " + " | ".join(cells), flush=True
            )
    for tail in (0, 256, 1024, 4096, 16384, 1 << 16):
        scan_job.TAIL_MAX = tail
        cells = [
            f"{size} {timed(cp, lambda b=bound['prefix-sum', size]: b.run(ol.compute_g)):8.1f}"
            for size in ("quick", "paper")
        ]
        print(f"scan TAIL_MAX={tail:6d}: " + " | ".join(cells), flush=True)
    x = cp.random.random(1 << 28, dtype=cp.float32)
    print(f"cupy.sum 2^28 {timed(cp, x.sum):.1f}")
    y = cp.random.random(50_000_000, dtype=cp.float32)
    print(f"cupy.cumsum 50M {timed(cp, lambda: cp.cumsum(y)):.1f}")


if __name__ == "__main__":
    main()
