"""Where a Dask task's time goes on one GPU (issue 21): one CuPy block of ``--mib`` MiB,
the map ``x[i] * 2.0 + 1.0`` and ``fold_all(add, 0.0, map(square, x))`` timed as

* ``direct``: ``ol.compute_g`` on the CuPy array (device mode);
* ``runner``: what a Dask fold task runs (``Runner.run`` of the fold node over the block);
* ``dask``: ``offload.dask.compute`` on a one-chunk Dask array, threaded scheduler;
* ``cupy``: CuPy's own ``x * 2.0 + 1.0`` and ``(x * x).sum()``;

each the median of ``--reps`` after a warm-up, synchronised; then a cProfile of the
slowest offload form (top functions by own time).

    python -m benchmarks.lab.dask_task_probe [--mib 1024] [--reps 5]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections.abc import Callable
from typing import Any

import offload as ol

MIB = 1 << 20


def add(a: Any, b: Any) -> Any:
    return a + b


def square(v: Any) -> Any:
    return v * v


def _median(fn: Callable[[], Any], reps: int, sync: Callable[[], None]) -> float:
    fn()
    sync()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    import cupy
    import dask
    import dask.array as da

    import offload.dask as old
    from offload.acc.fold import Fold
    from offload.dask.runtime import Runner

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args(argv)
    n = args.mib * MIB // 4
    x = (cupy.arange(n, dtype=cupy.float64) % 65536 / 32768).astype(cupy.float32)
    xd = da.from_array(x, chunks=n, asarray=False)

    def sync() -> None:
        cupy.cuda.get_current_stream().synchronize()

    def affine(i: Any) -> Any:
        return x[i] * 2.0 + 1.0

    def affine_d(i: Any) -> Any:
        return xd[i] * 2.0 + 1.0

    runner = Runner.for_target("g")
    forms: dict[str, Callable[[], Any]] = {
        "map direct": lambda: ol.compute_g(n, affine),
        "map dask": lambda: old.compute(xd.shape, affine_d, target="g").compute(),
        "map cupy": lambda: x * 2.0 + 1.0,
        "fold direct": lambda: ol.compute_g(ol.fold_all(add, 0.0, ol.map(square, x))),
        "fold runner": lambda: runner.run(Fold(add, 0.0, ol.map(square, x), n)),
        "fold dask": lambda: old.compute(
            ol.fold_all(add, 0.0, ol.map(square, xd)), target="g"
        ).compute(),
        "fold cupy": lambda: cupy.sum(x * x),
    }
    results = {}
    with dask.config.set(scheduler="threads"):
        for name, fn in forms.items():
            results[name] = _median(fn, args.reps, sync)
            gbs = (2 if name.startswith("map") else 1) * n * 4 / results[name] / 1e9
            print(f"{name:12} {results[name] * 1e3:9.3f} ms {gbs:8.1f} GB/s", flush=True)
        worst = max((k for k in results if "cupy" not in k), key=results.__getitem__)
        prof = cProfile.Profile()
        prof.enable()
        forms[worst]()
        sync()
        prof.disable()
    print(f"profile of {worst}:")
    pstats.Stats(prof).sort_stats("tottime").print_stats(14)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
