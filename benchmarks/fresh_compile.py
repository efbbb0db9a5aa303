"""Warm compile time of one benchmark in a fresh process: its kernels come from the disk
cache that an earlier run filled (SPEC §6: "compile time, cold, and warm from the disk cache
in a fresh process").

The runner calls it in a subprocess after measuring a GPU target in its own process, with
the same size, iterations and target: the first ``run`` then loads every kernel from disk
(no source-to-PTX work), and the second is warm. What is reported is the first call's
extra time over the second, with the disk cache's hit and miss counts of the process.
Outside both: imports, input setup, and a first ``compute_g`` of a one-line function
(``_warm_up``), which starts what every process starts once (CUDA context, CuPy, the
lazily imported compiler modules: about a second, run 10 call 10).

    python -m benchmarks.fresh_compile NAME SIZE TARGET [ITERS]
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

import numpy as np

from benchmarks.suite import ALL
from benchmarks.targets import TARGETS
from benchmarks.timing import time_once


def _warm_up(compute: Any) -> None:
    """One small kernel: the process's CUDA, CuPy and compiler start-up, not a benchmark's."""
    one = np.arange(4, dtype=np.float32)

    def twice(i: int) -> Any:
        return one[i] * 2.0

    compute((4,), twice)
    time_once(lambda: compute((4,), twice), True)


def measure(name: str, size: str, key: str, iters: int | None) -> dict[str, float | int]:
    """First and second call of ``name``'s ``run`` in this (fresh) process."""
    bench = ALL[name]
    params = bench.sizes[size]
    if iters is not None and hasattr(params, "iters"):
        params = dataclasses.replace(params, iters=iters)
    target = TARGETS[key]
    inputs = bench.make_inputs(params)
    with target.configured():
        compute = target.compute()
        _warm_up(compute)
        bound = bench.bind(target.resident(inputs))
        first, _ = time_once(lambda: bound.run(compute), True)
        second, _ = time_once(lambda: bound.run(compute), True)
        from offload.config import config
        from offload.targets import GPU

        # the target's backend (its memory mode is the configured one, inside ``with``)
        stats = GPU.resolve(config.compile_options()).cache.stats  # type: ignore[attr-defined]
    return {
        "first_call_s": first,
        "second_call_s": second,
        "fresh_compile_s": max(first - second, 0.0),
        "disk_hits": int(stats.disk_hits),
        "misses": int(stats.misses),
    }


def main(argv: list[str]) -> int:
    name, size, key = argv[:3]
    iters = int(argv[3]) if len(argv) > 3 else None
    print(json.dumps(measure(name, size, key, iters)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
