"""The parts of a warm device-mode ``compute_g`` call, each timed alone on the host (run on
the GPU machine): where the microseconds over the raw driver launch go.

Each part runs in batches of ``BATCH`` calls (the stream synchronised between batches, so
the launch queue never fills); the median host time per call over ``REPEATS`` batches is
printed, in microseconds. ``benchmarks/lab/overhead.py`` measures the whole calls by CUDA events.

    python -m benchmarks.lab.probe_launch
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import offload as ol
from offload.config import config
from offload.warm_lane import LANES

N = 1024
BATCH = 200
REPEATS = 25


def host_us(cp: Any, call: Callable[[], object]) -> float:
    """Median host microseconds per call."""
    times = []
    for _ in range(REPEATS):
        cp.cuda.get_current_stream().synchronize()
        t0 = time.perf_counter()
        for _ in range(BATCH):
            call()
        times.append((time.perf_counter() - t0) * 1e6 / BATCH)
    cp.cuda.get_current_stream().synchronize()
    return statistics.median(times)


def main() -> None:
    import cupy as cp

    config.memory = "device"
    x = cp.random.random(N, dtype=cp.float32)
    y = cp.random.random(N, dtype=cp.float32)
    alpha = np.float32(2.0)
    out = cp.empty(N, dtype=cp.float32)

    def element(i: int) -> Any:
        return alpha * x[i] + y[i]

    ol.compute_g(N, element)
    ol.compute_g(N, element, out=out)
    memo = LANES[id(element.__code__)]
    backend: Any = memo.backend
    choice: Any = memo.kernel
    kernel = choice.first.kernel
    values = memo.read(element)
    assert values is not None
    caps = backend.prepare_captures(values)
    shape = (N,)
    stream = cp.cuda.get_current_stream()
    args = kernel.args
    args.fill(shape, [out], caps)
    gx, gy, gz, bx, by, bz = kernel.dims[shape]
    fptr, params, sptr = kernel.fn_ptr, args.address, stream.ptr
    launch = cp.cuda.driver.launchKernel
    pool = backend.pool()
    f32 = np.dtype(np.float32)
    cp_pool = cp.get_default_memory_pool()
    fmt = "=" + "".join("Q" if p.kind.name in ("OUT", "PTR") else "i" for p in kernel.source.params)
    import struct

    pack = struct.Struct(fmt).pack_into
    storage = bytearray(struct.calcsize(fmt))
    packed = [0 for _ in kernel.source.params]
    print("params", [(p.kind.name, p.dtype) for p in kernel.source.params], fmt)

    parts: list[tuple[str, Callable[[], object]]] = [
        ("raw launchKernel", lambda: launch(fptr, gx, gy, gz, bx, by, bz, 0, sptr, params, 0)),
        ("get_current_stream", cp.cuda.get_current_stream),
        ("args.fill", lambda: args.fill(shape, [out], caps)),
        ("guard fits", lambda: choice.first.guard(shape, caps)),
        ("GPUKernel.launch", lambda: kernel.launch(shape, [out], caps)),
        ("KernelChoice.launch", lambda: choice.launch(shape, [out], caps)),
        ("prepare_captures", lambda: backend.prepare_captures(values)),
        ("memo.read", lambda: memo.read(element)),
        ("backend.writable(out)", lambda: backend.writable(out)),
        ("config.compile_options", config.compile_options),
        ("pool.empty", lambda: pool.empty(shape, f32)),
        ("cp.empty", lambda: cp.empty(N, dtype=cp.float32)),
        ("cp.ndarray(shape, dtype)", lambda: cp.ndarray(shape, f32)),
        ("pool malloc + ndarray", lambda: cp.ndarray(shape, f32, cp_pool.malloc(4 * N))),
        ("x.data.ptr", lambda: x.data.ptr),
        ("x.shape", lambda: x.shape),
        ("x.strides", lambda: x.strides),
        ("x.itemsize", lambda: x.itemsize),
        ("x._c_contiguous", lambda: x._c_contiguous),
        ("pack_into (no values read)", lambda: pack(storage, 0, *packed)),
        ("empty lambda", lambda: None),
        ("compute_g out=", lambda: ol.compute_g(N, element, out=out)),
        ("compute_g", lambda: ol.compute_g(N, element)),
    ]
    for name, call in parts:
        print(f"{name:24s} {host_us(cp, call):7.2f} us")


if __name__ == "__main__":
    main()
