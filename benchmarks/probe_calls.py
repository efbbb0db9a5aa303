"""Where volume-rendering's time goes (run on the GPU machine): its calls in device mode,
each timed over 100 calls on the host and by CUDA events.

Run 7 (H100) found that a colour call whose captured ``lengths`` is a compute_g result
costs ~24 us where the same call over the input array costs ~12-14 us; the benchmark's
iteration (58 us) is mostly that. Not yet explained.

    python -m benchmarks.probe_calls
"""

from __future__ import annotations

import time
from typing import Any

import offload as ol
from benchmarks.suite.volrender import BENCHMARK, MAX_LEN
from benchmarks.targets import TARGETS


def main() -> None:
    import cupy as cp

    target = TARGETS["gd"]
    with target.configured():
        inp = target.resident(BENCHMARK.make_inputs(BENCHMARK.sizes["paper"]))
        n = inp["params"].n
        lengths, visible, opacity = inp["ray0"], inp["visible"], inp["opacity"]

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
        flip = [0]

        def alternate() -> None:
            nonlocal lengths
            flip[0] ^= 1
            lengths = bufs[flip[0]]
            ol.compute_g(n, colour, out=res)

        def fixed_buf() -> None:
            nonlocal lengths
            lengths = bufs[0]
            ol.compute_g(n, colour, out=res)

        bound = BENCHMARK.bind(inp)
        for name, call in (
            ("colour", lambda: ol.compute_g(n, colour, out=res)),
            ("advance", lambda: ol.compute_g(n, advance, out=nxt)),
            ("colour, alternating lengths", alternate),
            ("benchmark run / iters", lambda: bound.run(ol.compute_g)),
            ("colour on bufs[0] fixed", fixed_buf),
        ):
            calls = 2 if name.startswith("benchmark") else 100
            per = calls * (inp["params"].iters if name.startswith("benchmark") else 1)
            for _ in range(calls):
                call()
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(calls):
                call()
            end.record()
            host = (time.perf_counter() - t0) * 1e6 / per
            end.synchronize()
            gpu = cp.cuda.get_elapsed_time(start, end) * 1e3 / per
            print(f"{name:28s} host {host:8.3f} us/call   events {gpu:8.3f} us/call")


if __name__ == "__main__":
    main()
