"""Where compute_p's time goes on a many-core host (run on the GPU machine's CPU): per-call
times of compute_s and compute_p for benchmarks whose compute_p run 10 found no faster than
compute_s (smvm, 7pt-stencil), and a control (blackscholes), under numba's threading layer
and several thread counts.

    python -m benchmarks.lab.probe_cpu
"""

from __future__ import annotations

import dataclasses
import statistics
import time

import numba

import offload as ol
from benchmarks.suite import ALL


def main() -> None:
    print(
        f"numba {numba.__version__}, threads {numba.get_num_threads()}"
        f"/{numba.config.NUMBA_NUM_THREADS}"
    )
    top = numba.config.NUMBA_NUM_THREADS
    counts = sorted({top, top // 2, 4, 2, 1} & set(range(1, top + 1)), reverse=True)
    for name in ("smvm", "7pt-stencil", "blackscholes"):
        bench = ALL[name]
        params = bench.sizes["paper"]
        if hasattr(params, "iters"):  # one iteration per call, as run 10's --iters 1
            params = dataclasses.replace(params, iters=1)
        inputs = bench.make_inputs(params)
        bound = bench.bind(inputs)
        for label, compute in (("compute_s", ol.compute_s), ("compute_p", ol.compute_p)):
            bound.run(compute)  # compile
            for threads in (None,) if label == "compute_s" else counts:
                if threads is not None:
                    numba.set_num_threads(threads)
                times = []
                for _ in range(7):
                    t0 = time.perf_counter()
                    bound.run(compute)
                    times.append(time.perf_counter() - t0)
                print(
                    f"{name:14s} {label} threads={threads}: "
                    f"median {statistics.median(times) * 1e3:.2f} ms min {min(times) * 1e3:.2f} ms"
                )
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    print("threading layer:", numba.threading_layer())


if __name__ == "__main__":
    main()
