"""Where volume-rendering's time goes (run on the GPU machine): its calls in device mode,
each timed over 100 calls on the host and by CUDA events, then one call at a time by
events (the kernel's own time), then a cProfile of the slowest variant's host work.

Run 7 (H100) found that a colour call whose captured ``lengths`` is a compute_g result
costs ~24 us where the same call over the input array costs ~12-14 us; the benchmark's
iteration (58 us) is mostly that.

    python -m benchmarks.lab.probe_calls
"""

from __future__ import annotations

import cProfile
import io
import pstats
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import offload as ol
from benchmarks.suite.volrender import BENCHMARK, MAX_LEN
from benchmarks.targets import TARGETS


def describe(name: str, a: Any) -> None:
    """The facts of a capture a kernel could depend on."""
    mem: Any = getattr(a, "data", None)
    where = (
        f"mem={type(mem.mem).__name__}" if hasattr(mem, "mem") else f"writeable={a.flags.writeable}"
    )
    print(
        f"{name:10s} {type(a).__module__}.{type(a).__name__} dtype={a.dtype} shape={a.shape} "
        f"strides={a.strides} {where} min={int(a.min())} max={int(a.max())} sum={int(a.sum())}"
    )


def timed(cp: Any, call: Callable[[], object], calls: int) -> tuple[float, float, float]:
    """(host us/call, events us/call over ``calls`` back to back, median us of one call
    timed alone by events)."""
    for _ in range(calls):
        call()
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(calls):
        call()
    end.record()
    host = (time.perf_counter() - t0) * 1e6 / calls
    end.synchronize()
    gpu = cp.cuda.get_elapsed_time(start, end) * 1e3 / calls
    alone = []
    for _ in range(21):
        cp.cuda.Device().synchronize()
        start.record()
        call()
        end.record()
        end.synchronize()
        alone.append(cp.cuda.get_elapsed_time(start, end) * 1e3)
    return host, gpu, statistics.median(alone)


def main() -> None:
    import cupy as cp

    target = TARGETS["gd"]
    with target.configured():
        inp = target.resident(BENCHMARK.make_inputs(BENCHMARK.sizes["paper"]))
        n = inp["params"].n
        ray0 = inp["ray0"]
        lengths, visible, opacity = ray0, inp["visible"], inp["opacity"]

        def colour(i: int) -> Any:
            c = 0.0
            v = i
            while v < i + lengths[i]:
                if visible[v] != 0 and opacity[v] != 0:
                    return opacity[v] + 1.0
                v += 1
            return c

        def advance(i: int) -> Any:
            return (lengths[i] + 1) % MAX_LEN

        res = ol.compute_g(n, colour)
        nxt = ol.compute_g(n, advance)
        bufs = [ol.compute_g(n, advance), ol.compute_g(n, advance)]
        plain = cp.array(bufs[0])  # the same values in CuPy's own allocation
        shifted = cp.asarray(np.roll(ray0, 1))  # other values, CuPy's allocation
        device_ray0 = cp.asarray(ray0)
        describe("ray0", ray0)
        describe("bufs[0]", bufs[0])
        describe("plain", plain)
        describe("shifted", shifted)
        describe("dev ray0", device_ray0)
        flip = [0]

        def on(a: Any) -> Callable[[], None]:
            def call() -> None:
                nonlocal lengths
                lengths = a
                ol.compute_g(n, colour, out=res)

            return call

        def alternate() -> None:
            nonlocal lengths
            flip[0] ^= 1
            lengths = bufs[flip[0]]
            ol.compute_g(n, colour, out=res)

        bound = BENCHMARK.bind(inp)
        variants: list[tuple[str, Callable[[], object], int]] = [
            ("colour on ray0", on(ray0), 1),
            ("colour on bufs[0]", on(bufs[0]), 1),
            ("colour on cp.asarray(ray0)", on(device_ray0), 1),
            ("colour on plain copy", on(plain), 1),
            ("colour on shifted ray0", on(shifted), 1),
            ("colour, alternating bufs", alternate, 1),
            ("advance", lambda: ol.compute_g(n, advance, out=nxt), 1),
            ("benchmark run / iters", lambda: bound.run(ol.compute_g), inp["params"].iters),
        ]
        print(f"{'variant':28s} {'host/call':>10s} {'events/call':>12s} {'one call':>10s}  (us)")
        for name, call, per in variants:
            calls = 2 if per > 1 else 100
            host, gpu, alone = timed(cp, call, calls)
            print(f"{name:28s} {host / per:10.2f} {gpu / per:12.2f} {alone / per:10.2f}")
        for name, call, _ in variants[:2]:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(2000):
                call()
            cp.cuda.Device().synchronize()
            prof.disable()
            text = io.StringIO()
            pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(12)
            print(f"--- cProfile, 2000 calls: {name}")
            print("\n".join(text.getvalue().splitlines()[:30]))


if __name__ == "__main__":
    main()
