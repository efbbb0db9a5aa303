"""Where unified mode's per-call time goes, against device mode (run on the GPU machine).

    python3 -m benchmarks.lab.unified_tax [NAME ...] [--size paper] [--repeat 5]

For each benchmark: the timed region (``bench.run`` over resident inputs, as the runner
times it) in device mode and in unified mode, per iteration; then, in unified mode, each
launch's GPU time (CUDA events recorded around ``GPUKernel.launch`` on the current stream)
and the host time spent in each backend phase per call (``allocate``, ``prepare_outputs``,
``prepare_captures``, ``launch`` including its synchronise), and the rest of the call
(driver, memo, capture reading). Finally a cProfile of unified mode's timed region (top
functions by own time). Medians over ``--repeat`` runs; microseconds.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

DEFAULT = ("2d-convolution", "7pt-stencil", "blackscholes", "backprojection")


def _per_iter(run: Callable[[], Any], iters: int, repeat: int, sync: Callable[[], None]) -> float:
    times = []
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        run()
        sync()
        times.append((time.perf_counter() - t0) / iters)
    return statistics.median(times) * 1e6


def _instrument(cp: Any) -> tuple[dict[str, list[float]], list[Any], Callable[[], None]]:
    """Wrap the backend phases with host timers and the kernel launch with CUDA events."""
    from offload.ptx.backend import GPUBackend
    from offload.ptx.launch import GPUKernel

    host: dict[str, list[float]] = defaultdict(list)
    events: list[Any] = []
    saved: list[tuple[type, str, Any]] = []

    def wrap(cls: type, name: str, gpu: bool = False) -> None:
        orig = getattr(cls, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            if gpu:
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record()
            t0 = time.perf_counter()
            out = orig(*args, **kwargs)
            host[name].append(time.perf_counter() - t0)
            if gpu:
                end.record()
                events.append((start, end))
            return out

        saved.append((cls, name, orig))
        setattr(cls, name, timed)

    for phase in ("allocate", "prepare_outputs", "prepare_captures"):
        wrap(GPUBackend, phase)
    wrap(GPUKernel, "launch", gpu=True)

    def restore() -> None:
        for cls, name, orig in saved:
            setattr(cls, name, orig)

    return host, events, restore


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(DEFAULT))
    ap.add_argument("--size", default="paper")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    import cupy as cp

    import offload as ol
    from benchmarks.suite import ALL
    from benchmarks.targets import TARGETS

    stream_sync = cp.cuda.get_current_stream().synchronize
    for name in args.names:
        bench = ALL[name]
        inputs = bench.make_inputs(bench.sizes[args.size])
        iters = bench.iters(inputs["params"])
        row: dict[str, float] = {}
        profiles: dict[str, cProfile.Profile] = {}
        for key in ("gd", "g"):
            target = TARGETS[key]
            with target.configured():
                compute = target.compute()
                bound = bench.bind(target.resident(inputs))
                bound.run(compute)
                bound.run(compute)
                row[key] = _per_iter(lambda: bound.run(compute), iters, args.repeat, stream_sync)
                prof = cProfile.Profile()
                prof.enable()
                bound.run(compute)
                stream_sync()
                prof.disable()
                profiles[key] = prof
                if key != "g":
                    continue
                host, events, restore = _instrument(cp)
                try:
                    calls_t0 = time.perf_counter()
                    bound.run(compute)
                    stream_sync()
                    wall = (time.perf_counter() - calls_t0) * 1e6
                finally:
                    restore()
                calls = max(len(host["launch"]), 1)
                gpu = [cp.cuda.get_elapsed_time(s, e) * 1e3 for s, e in events]
        print(f"\n== {name} ({args.size}, {iters} iterations, {calls} launches a run)")
        print(
            f"per iteration: device {row['gd']:.1f} us, unified {row['g']:.1f} us "
            f"(unified/device {row['g'] / row['gd']:.2f})"
        )
        print(f"unified, one instrumented run: wall {wall / calls:.1f} us per launch")
        print(
            f"  kernel (events around launch): median {statistics.median(gpu):.1f} us, "
            f"min {min(gpu):.1f}, max {max(gpu):.1f}"
        )
        accounted = 0.0
        for phase, ts in host.items():
            per = sum(ts) / calls * 1e6
            accounted += per
            print(
                f"  host {phase:17s} {per:8.1f} us per launch "
                f"(median {statistics.median(ts) * 1e6:.1f}, n={len(ts)})"
            )
        print(f"  rest of the call    {wall / calls - accounted:8.1f} us per launch")
        for key, prof in profiles.items():
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(18)
            print(f"-- cProfile, {TARGETS[key].label}")
            print("\n".join(buf.getvalue().splitlines()[:40]))
    ol.config.memory = "unified"


if __name__ == "__main__":
    main()
