"""Kernels of a warm ``fold_all`` (sum of float32, device mode) and of ``cupy.sum`` at
given sizes, for a profiler to time one by one (GPU only):

    ncu --metrics gpu__time_duration.sum --csv python -m benchmarks.lab.tail_probe \
        [--sizes 16,20] [--calls 10] [--unroll K]

Each size: a warm-up call of each (compiles, fills the pools), then ``calls`` calls of
each, synchronised at the end. ``--summary FILE`` reads such an ``ncu --csv`` log and
prints the median duration (µs) of each kernel name. ``--unroll K`` sets the tail's loads
in flight (``fold_src.STAGE_UNROLL``) for an A/B; each size prints its sum's bits.
``--threads T`` sets a spread tail's block size
(``fold_tail.SPREAD_THREADS``: the same bits). ``--chunk C`` and ``--final F`` set the
wide tree's least partial and last fold (``plan.WIDE_CHUNK``, ``plan.FINAL``): another
tree, so other bits.
"""

from __future__ import annotations

import argparse
import csv
import statistics
from collections import defaultdict
from typing import Any

import numpy as np


def add(a: Any, b: Any) -> Any:
    return a + b


def _summary(path: str) -> None:
    rows: dict[str, list[float]] = defaultdict(list)
    with open(path) as f:
        lines = [ln for ln in f if ln.startswith('"')]
    for rec in csv.DictReader(lines):
        if rec.get("Metric Name") == "gpu__time_duration.sum":
            value = float(rec["Metric Value"].replace(",", ""))
            unit = rec["Metric Unit"]
            scale = {"ns": 1e-3, "nsecond": 1e-3, "ms": 1e3, "msecond": 1e3}.get(unit, 1.0)
            rows[f"{rec['Kernel Name'][:60]} grid {rec.get('Grid Size', '')}"].append(value * scale)
    for name, vals in rows.items():
        print(f"{statistics.median(vals):9.2f} us  x{len(vals):<3} {name}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="16,20")
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--summary", default=None)
    ap.add_argument(
        "--unroll", type=int, default=None, help="the tail's staged loads in flight (A/B)"
    )
    ap.add_argument(
        "--chunk", type=int, default=None, help="the wide tree's least partial (A/B; new bits)"
    )
    ap.add_argument("--final", type=int, default=None, help="the tree's last fold's most values")
    ap.add_argument(
        "--threads", type=int, default=None, help="a spread tail's block size (A/B; same bits)"
    )
    args = ap.parse_args()
    if args.summary:
        _summary(args.summary)
        return
    import cupy as cp

    import offload as ol

    if args.unroll is not None:  # (read when the tail's source is made: before any call)
        from offload.acc.skeletons import fold_src

        fold_src.STAGE_UNROLL = args.unroll

    from offload.acc import plan

    if args.threads is not None:
        from offload.acc import fold_tail

        fold_tail.SPREAD_THREADS = args.threads
    if args.chunk is not None:
        plan.WIDE_CHUNK = args.chunk
    if args.final is not None:
        plan.FINAL = args.final
    ol.config.memory = "device"
    for e in (int(s) for s in args.sizes.split(",")):
        x = cp.asarray(np.random.default_rng(e).uniform(-1, 1, 1 << e).astype(np.float32))
        node = ol.fold_all(add, 0.0, x)
        ol.compute_g(node)
        cp.sum(x)
        cp.cuda.Device().synchronize()
        for _ in range(args.calls):
            ol.compute_g(node)
        for _ in range(args.calls):
            cp.sum(x)
        cp.cuda.Device().synchronize()
        got = ol.compute_g(node)
        print(f"2^{e}: sum {float(got):.9g} ({np.asarray(got.get()).tobytes().hex()})")


if __name__ == "__main__":
    main()
