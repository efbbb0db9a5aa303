"""Host time of a collective call whose node is built anew on every call (as a user's loop
writes ``compute_g(scanl1(add, x))``) against the same node kept, on any target:

    python -m benchmarks.lab.new_node [--target g|s|p] [--sizes 16,20] [--calls 2000]
        [--op scanl1|fold_all] [--profile N]

Per size: the median µs a call of ``calls`` calls in a row without a synchronise (the
host's time; on the GPU in device mode, while the host is slower than the kernels) for a
new node and for a kept one, and on the GPU the time of one call between CUDA events
after a synchronise (what ``scan_bw`` reports). ``--profile N``: cProfile of ``N`` new-node
and kept calls at the last size, the functions whose cumulative time differs most first.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def add(a: Any, b: Any) -> Any:
    return a + b


def _host(fn: Callable[[], Any], calls: int, sync: Callable[[], None]) -> float:
    """Median µs a call over five batches of ``calls`` unsynchronised calls."""
    fn()
    sync()
    out = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls * 1e6)
        sync()
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="g", choices=("g", "s", "p"))
    ap.add_argument("--sizes", default="16,20")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--op", default="scanl1", choices=("scanl1", "fold_all"))
    ap.add_argument("--profile", type=int, default=0)
    args = ap.parse_args()
    import offload as ol

    compute = {"g": ol.compute_g, "s": ol.compute_s, "p": ol.compute_p}[args.target]
    xp: Any = np
    sync: Callable[[], None] = lambda: None
    if args.target == "g":
        import cupy as cp

        ol.config.memory = "device"
        xp = cp
        sync = cp.cuda.Device().synchronize

    def build(x: Any) -> Any:
        return ol.scanl1(add, x) if args.op == "scanl1" else ol.fold_all(add, 0.0, x)

    new: Callable[[], Any] = lambda: None
    for e in (int(s) for s in args.sizes.split(",")):
        x = xp.asarray(np.random.default_rng(e).uniform(-1, 1, 1 << e).astype(np.float32))
        node = build(x)
        new = lambda x=x: compute(build(x))
        kept = lambda node=node: compute(node)
        row = f"{args.op} 2^{e} {args.target}: host new {_host(new, args.calls, sync):7.2f}"
        row += f" kept {_host(kept, args.calls, sync):7.2f} us"
        if args.target == "g":
            from benchmarks.lab.cccl_peers import _time

            row += f"; events new {_time(cp, new, 50):7.2f} kept {_time(cp, kept, 50):7.2f} us"
        print(row, flush=True)
    if args.profile:
        _profile_diff(new, kept, args.profile, sync)


def _profile_diff(
    new: Callable[[], Any], kept: Callable[[], Any], calls: int, sync: Callable[[], None]
) -> None:
    """cProfile of ``calls`` calls of each: the functions whose cumulative time a call
    differs most between a new node and a kept one (profiled µs, inflated alike)."""
    per: dict[str, dict[str, float]] = {}
    for label, fn in (("new", new), ("kept", kept)):
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(calls):
            fn()
        prof.disable()
        sync()
        stats: Any = pstats.Stats(prof).stats  # (file, line, name) -> (..., cumtime, ...)
        per[label] = {
            f"{k[0].rsplit('/', 1)[-1]}:{k[1]}({k[2]})": v[3] / calls * 1e6
            for k, v in stats.items()
        }
    keys = set(per["new"]) | set(per["kept"])
    rows = sorted(keys, key=lambda k: per["kept"].get(k, 0.0) - per["new"].get(k, 0.0))
    print("profiled us a call (cumulative): new, kept, function")
    for k in rows[:40]:
        print(f"{per['new'].get(k, 0.0):9.2f} {per['kept'].get(k, 0.0):9.2f}  {k}")


if __name__ == "__main__":
    main()
