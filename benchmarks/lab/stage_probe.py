"""Host arrays into a kernel in device mode (issue 21): ``offload.runtime.staging.to_device``
(pinned pieces filled by the host threads) against one pageable copy (``cupy.asarray``),
and ``ol.compute_g`` of a map and of a ``fold_all`` over a float32 host array, staged and
not (``STAGE_MIN`` raised past the array), alternating in one run (best of ``--reps``).

    python -m benchmarks.lab.stage_probe [--mib 256,1024,4096] [--reps 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import offload as ol
from offload.runtime import staging

MIB = 1 << 20


def add(a: Any, b: Any) -> Any:
    return a + b


def square(v: Any) -> Any:
    return v * v


def _best(fn: Callable[[], Any], reps: int, sync: Callable[[], None]) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    import cupy

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", default="256,1024,4096")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    ol.config.memory = "device"
    stream = cupy.cuda.get_current_stream()
    staged_min = staging.STAGE_MIN
    print(f"host threads {staging.HOST_THREADS}; GB/s of the host array's bytes")
    print(f"{'MiB':>6} {'form':22} {'staged':>8} {'pageable':>9}")
    for mib in (int(m) for m in args.mib.split(",")):
        x = np.empty(mib * MIB // 4, np.float32)
        x[:] = np.float32(1.25)
        x[::7] = np.float32(0.5)
        gb = x.nbytes / 1e9

        def affine(i: Any) -> Any:
            return x[i] * 2.0 + 1.0

        forms: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
            "copy in": (
                lambda: staging.to_device(cupy, x, stream.ptr),
                lambda: cupy.asarray(x),
            ),
            "compute_g map": (lambda: ol.compute_g(x.shape, affine),) * 2,
            "compute_g fold_all": (lambda: ol.compute_g(ol.fold_all(add, 0.0, ol.map(square, x))),)
            * 2,
        }
        for name, (staged, plain) in forms.items():
            staged()
            plain()
            stream.synchronize()
            times: dict[str, list[float]] = {"staged": [], "pageable": []}
            for _ in range(args.reps):
                staging.STAGE_MIN = staged_min
                times["staged"].append(_best(staged, 1, stream.synchronize))
                staging.STAGE_MIN = 1 << 62
                times["pageable"].append(_best(plain, 1, stream.synchronize))
            staging.STAGE_MIN = staged_min
            s, p = min(times["staged"]), min(times["pageable"])
            print(f"{mib:>6} {name:22} {gb / s:8.1f} {gb / p:9.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
