"""Where a collective's time goes on the GPU: each launch of one warm call, timed alone.

    python -m benchmarks.lab.acc_trace [--size paper] [--names sum,prefix-sum]

For each collective benchmark (device mode: inputs copied to the GPU first), the warm
call's median time (CUDA events around the whole call, 20 repeats), then one traced call:
every element-kernel launch (``offload.ptx.launch.GPUKernel.launch``) and every skeleton
launch (``offload.acc.skeletons.build.Module.launch``) synchronised and timed by events,
with its grid. What is left of the call is host work (allocation, planning, Python).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import statistics
import time
from collections.abc import Iterator
from typing import Any

MODULES = {
    "sum": "reduce_sum",
    "prefix-sum": "prefix_sum",
    "histogram": "histogram",
    "dotp": "dotp",
    "smvm": "smvm",
}


@contextlib.contextmanager
def traced(cp: Any, log: list[dict[str, Any]]) -> Iterator[None]:
    """Every launch synchronised and timed into ``log`` while inside."""
    from offload.acc.skeletons import build, rawlaunch
    from offload.ptx import launch

    real_module, real_kernel = build.Module.launch, launch.GPUKernel.launch
    real_template = rawlaunch.Template.launch

    def timed(kind: str, name: str, detail: str, fn: Any) -> None:
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        host = time.perf_counter() - t0
        ms = cp.cuda.get_elapsed_time(start, stop)
        log.append(
            {"kind": kind, "name": name, "detail": detail, "us": ms * 1e3, "host_us": host * 1e6}
        )

    def module_launch(self: Any, kernel: str, items: int, *args: Any, blocks: Any = None) -> None:
        timed(
            "skeleton",
            kernel,
            f"items={items} blocks={blocks}",
            lambda: real_module(self, kernel, items, *args, blocks=blocks),
        )

    def kernel_launch(self: Any, shape: Any, outs: Any, captures: Any) -> None:
        timed(
            "element",
            self.user_name,
            f"shape={tuple(shape)} dims={self.dims.get(tuple(shape))}",
            lambda: real_kernel(self, shape, outs, captures),
        )

    def template_launch(self: Any, grid: int, threads: int, *values: Any) -> None:
        timed(
            "skeleton",
            "template",  # (a warm skeleton launch: ``Module.template``)
            f"blocks={grid}",
            lambda: real_template(self, grid, threads, *values),
        )

    build.Module.launch = module_launch  # type: ignore[method-assign]
    launch.GPUKernel.launch = kernel_launch  # type: ignore[method-assign]
    rawlaunch.Template.launch = template_launch  # type: ignore[method-assign]
    try:
        yield
    finally:
        build.Module.launch = real_module  # type: ignore[method-assign]
        launch.GPUKernel.launch = real_kernel  # type: ignore[method-assign]
        rawlaunch.Template.launch = real_template  # type: ignore[method-assign]


def event_times(cp: Any, call: Any, repeat: int) -> list[float]:
    """Microseconds of ``repeat`` warm calls of ``call`` (CUDA events; one call first)."""
    call()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        call()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    return times


def on_device(cp: Any, inputs: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    return {k: cp.asarray(v) if isinstance(v, np.ndarray) else v for k, v in inputs.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="paper")
    ap.add_argument("--names", default=",".join(MODULES))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    import cupy as cp

    import offload as ol

    ol.config.memory = "device"
    rows: list[dict[str, Any]] = []
    for name in args.names.split(","):
        mod = importlib.import_module(f"benchmarks.suite.{MODULES[name]}")
        bench = mod.BENCHMARK
        params = bench.sizes[args.size]
        inputs = on_device(cp, bench.make_inputs(params))
        bound = bench.bind(inputs)

        def call(bound: Any = bound) -> Any:
            return bound.run(ol.compute_g)

        times = event_times(cp, call, args.repeat)
        log: list[dict[str, Any]] = []
        with traced(cp, log):
            call()
        median = statistics.median(times)
        in_kernels = sum(e["us"] for e in log)
        print(
            f"== {name} ({args.size}): warm call {median:.1f} us (min {min(times):.1f}); "
            f"{len(log)} launches, {in_kernels:.1f} us in them (traced)"
        )
        for e in log:
            print(
                f"   {e['kind']:8s} {e['name']:16s} {e['us']:9.1f} us  host {e['host_us']:8.1f}"
                f"  {e['detail']}"
            )
        rows.append({"name": name, "size": args.size, "median_us": median, "launches": log})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
