"""Where unified mode's per-call time goes, against device mode (run on the GPU machine).

    python3 -m benchmarks.lab.unified_tax [NAME ...] [--size paper] [--repeat 5]

For each benchmark: the timed region (``bench.run`` over resident inputs, as the runner
times it) in device mode and in unified mode, per iteration; then the unified call's kernel
launched directly, without offload's Python: back to back on its managed buffers, back to
back on device copies (does managed memory slow the kernel?), and launch + synchronise per
launch (the round trip every unified call pays). Unified per iteration minus the last is
offload's host path. Finally a cProfile of each mode's timed region (top functions by own
time). Medians over ``--repeat`` runs; microseconds.
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


def _raw_launches(cp: Any, fn: Any, shape: tuple[int, ...], iters: int) -> dict[str, float]:
    """The unified memo's kernel launched directly (no offload Python): back to back on its
    managed buffers, back to back on device copies of them, and launch + synchronise each
    time on the managed buffers. Microseconds per launch."""
    import numpy as np

    import offload as ol
    from offload import driver
    from offload.runtime.memory import managed_buffer

    memo = driver._LANES[id(fn.__code__)]
    values = memo.read(fn)
    backend = memo.backend
    kernel = memo.kernel.leading()
    out = ol.compute_g(shape, fn)
    outs = [out] if not isinstance(out, tuple) else list(out)
    prepared = backend.prepare_captures(values)
    dev_values = [
        cp.asarray(v) if isinstance(v, np.ndarray) and managed_buffer(v) is not None else v
        for v in values
    ]
    dev_outs = [cp.empty(o.shape, o.dtype) for o in outs]
    dev_prepared = backend.prepare_captures(dev_values)
    stream = cp.cuda.get_current_stream()
    got: dict[str, float] = {}
    saved = kernel.synchronize
    try:
        for label, o, caps, sync in (
            ("managed, back to back", outs, prepared, False),
            ("device, back to back", dev_outs, dev_prepared, False),
            ("managed, launch+sync", outs, prepared, True),
        ):
            kernel.synchronize = sync
            for _ in range(3):
                kernel.launch(shape, o, caps)
            stream.synchronize()
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(iters):
                kernel.launch(shape, o, caps)
            end.record()
            end.synchronize()
            got[label] = cp.cuda.get_elapsed_time(start, end) * 1e3 / iters
    finally:
        kernel.synchronize = saved
    return got


def _breakdown(bound: Any, compute: Any, fn: Any, stream_sync: Any) -> dict[str, float]:
    """Host time per call in each step of unified mode's warm lane (one run, timers
    wrapped around the steps; the sum is compared with the call's wall time)."""
    from offload import driver
    from offload.ptx.backend import GPUBackend
    from offload.runtime.residency import HOST_PAGES

    spent: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    restore: list[Any] = []

    def timed(name: str, f: Any) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                spent[name] += time.perf_counter() - t0
                counts[name] += 1

        return wrapper

    memo = driver._LANES[id(fn.__code__)]
    lane = [memo, *memo.others]
    for m in lane:
        restore.append((m, "launch", m.launch))
        restore.append((m, "read", m.read))
        m.launch = timed("launch (fused: pack, launch, sync)", m.launch)
        m.read = timed("read captures", m.read)
    for name in ("allocate", "prepare_outputs", "writable"):
        restore.append((GPUBackend, name, getattr(GPUBackend, name)))
        setattr(GPUBackend, name, timed(f"backend.{name}", getattr(GPUBackend, name)))
    restore.append((driver, "overlapping", driver.overlapping))
    driver.overlapping = timed("overlapping", driver.overlapping)  # type: ignore[attr-defined]
    restore.append((HOST_PAGES, "touched", HOST_PAGES.touched))
    HOST_PAGES.touched = timed("(of which) pagemap reads", HOST_PAGES.touched)  # type: ignore[method-assign]
    try:
        stream_sync()
        t0 = time.perf_counter()
        bound.run(compute)
        stream_sync()
        wall = time.perf_counter() - t0
    finally:
        for obj, name, value in reversed(restore):
            setattr(obj, name, value)
    calls = max(counts["read captures"], 1)
    out = {k: v / calls * 1e6 for k, v in spent.items()}
    out["wall per call"] = wall / calls * 1e6
    return out


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
                caught: dict[str, Any] = {}

                def catch(shape: Any, fn: Any = None, **kw: Any) -> Any:
                    caught.setdefault("call", (shape, fn))
                    return compute(shape, fn, **kw)

                bound.run(catch)
                shape, fn = caught["call"]
                shape = (shape,) if isinstance(shape, int) else tuple(shape)
                raw = _raw_launches(cp, fn, shape, 50)
                parts = _breakdown(bound, compute, fn, stream_sync)
        print(f"\n== {name} ({args.size}, {iters} iterations)")
        print(
            f"per iteration: device {row['gd']:.1f} us, unified {row['g']:.1f} us "
            f"(unified/device {row['g'] / row['gd']:.2f})"
        )
        for label, us in raw.items():
            print(f"  raw kernel, {label:22s} {us:8.1f} us per launch")
        for label, us in parts.items():
            print(f"  unified call: {label:34s} {us:8.1f} us")
        for key, prof in profiles.items():
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(18)
            print(f"-- cProfile, {TARGETS[key].label}")
            print("\n".join(buf.getvalue().splitlines()[:40]))
    ol.config.memory = "unified"


if __name__ == "__main__":
    main()
