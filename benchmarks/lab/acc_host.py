"""Host time of a warm collective call on the GPU: cProfile of repeated calls.

python -m benchmarks.lab.acc_host [--name dotp] [--size quick] [--calls 300]
    [--memory device|unified]

Device mode reads CuPy inputs; unified mode (the default's) reads inputs frozen with
``ol.use``, as the runner's ``g`` target does, and each call synchronises.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import pstats
import time

from benchmarks.lab.acc_trace import MODULES, on_device
from benchmarks.targets import TARGETS


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="dotp")
    ap.add_argument("--size", default="quick")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--top", type=int, default=45)
    ap.add_argument("--sort", default="tottime", help="pstats order: tottime, cumulative")
    ap.add_argument("--memory", default="device", choices=("device", "unified"))
    args = ap.parse_args()
    import cupy as cp

    import offload as ol

    ol.config.memory = args.memory
    bench = importlib.import_module(f"benchmarks.suite.{MODULES[args.name]}").BENCHMARK
    inputs = bench.make_inputs(bench.sizes[args.size])
    if args.memory == "device":
        inputs = on_device(cp, inputs)
    else:
        inputs = TARGETS["g"].resident(inputs)
    bound = bench.bind(inputs)
    bound.run(ol.compute_g)
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(args.calls):
        bound.run(ol.compute_g)
    host = (time.perf_counter() - t0) / args.calls
    cp.cuda.Device().synchronize()
    what = f"{args.name} {args.size} {args.memory}"
    print(f"{what}: host time per warm call {host * 1e6:.1f} us (no profiler)")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.calls):
        bound.run(ol.compute_g)
    prof.disable()
    cp.cuda.Device().synchronize()
    pstats.Stats(prof).sort_stats(args.sort).print_stats(args.top)


if __name__ == "__main__":
    main()
