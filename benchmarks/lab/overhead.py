"""Launch overhead and compile times of the GPU backend (run on the GPU machine).

Measured in one run, on one kernel (saxpy, float32), with device-resident inputs:

* ``kernel``: the loaded function launched directly with pre-packed arguments (the floor);
* ``offload``: what a warm compute_g does in the backend -- ``prepare_captures`` + ``launch``
  (pointer views, argument packing, launch configuration, stream lookup);
* ``cupy-ewk``: a CuPy ``ElementwiseKernel`` of the same computation;
* ``numba``: a numba dispatcher launch of the same kernel on the same (zero-copy) arrays;
* ``compute_g``: the whole public warm call, ``ol.compute_g(n, lambda i: alpha * x[i] +
  y[i])`` with CuPy inputs, in device mode (a pooled result per call) and with ``out=``;
  in unified mode (a managed NumPy result per call, and the call waits for the kernel)
  it is compared with ``kernel+sync``, the raw launch followed by a stream synchronise.

Each is timed with CUDA events over a batch of back-to-back calls (per-call time = batch
time / calls; at small sizes that is the launch rate), repeated; medians and spread are
reported, plus host-side time per call. Then: cold compile (source -> PTX -> loaded
kernel), PTX load alone, and a fresh process hitting the disk cache, per kernel.

    python benchmarks/lab/overhead.py [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

BATCH = 200
REPEATS = 15


def _events_per_call(cp: Any, fn: Callable[[], object]) -> list[float]:
    """Microseconds per call over ``REPEATS`` batches, by CUDA events."""
    for _ in range(20):
        fn()
    cp.cuda.get_current_stream().synchronize()
    out = []
    for _ in range(REPEATS):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(BATCH):
            fn()
        end.record()
        end.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, end) * 1000.0 / BATCH)
    return out


def _host_per_call(cp: Any, fn: Callable[[], object]) -> list[float]:
    out = []
    for _ in range(REPEATS):
        cp.cuda.get_current_stream().synchronize()
        t0 = time.perf_counter()
        for _ in range(BATCH):
            fn()
        out.append((time.perf_counter() - t0) * 1e6 / BATCH)
    cp.cuda.get_current_stream().synchronize()
    return out


def _summary(xs: list[float]) -> dict[str, float]:
    qs = statistics.quantiles(xs, n=4)
    return {
        "median": statistics.median(xs),
        "q1": qs[0],
        "q3": qs[2],
        "min": min(xs),
        "max": max(xs),
    }


def launch_overhead(n: int) -> dict[str, Any]:
    import cupy as cp
    from numba import cuda

    from offload.options import CompileOptions
    from offload.ptx.backend import GPUBackend
    from offload.ptx.compile import python_function
    from tests.ptx.irfixtures import saxpy_f32

    be = GPUBackend(mode="device", cache_dir=None)
    fn = saxpy_f32()
    kernel = be.compile(fn, CompileOptions())
    x = cp.random.random(n, dtype=cp.float32)
    y = cp.random.random(n, dtype=cp.float32)
    (out,) = be.allocate((n,), [np.dtype(np.float32)])
    alpha = np.float32(2.0)
    shape = (n,)
    caps = [x, y, alpha]

    def offload_call() -> None:
        kernel.launch(shape, [out], be.prepare_captures(caps))

    views = be.prepare_captures(caps)
    lead = kernel.pick(shape, views)
    cfg = lead.config(shape)
    lead.args.fill(shape, [out], views)
    (gx, gy, gz), (bx, by, bz) = cfg.grid, cfg.block
    params, fptr = lead.args.address, lead.fn_ptr
    stream_ptr = cp.cuda.get_current_stream().ptr
    launch = cp.cuda.driver.launchKernel

    def raw_call() -> None:  # the floor: one driver call with pre-filled arguments
        launch(fptr, gx, gy, gz, bx, by, bz, 0, stream_ptr, params, 0)

    ewk = cp.ElementwiseKernel(
        "float32 a, float32 x, float32 y", "float32 z", "z = a * x + y", "saxpy_ewk"
    )
    out2 = cp.empty_like(x)

    def ewk_call() -> None:
        ewk(alpha, x, y, out2)

    nb_kernel = cuda.jit(python_function(lead.source, "saxpy_numba"))
    nb_args = [
        np.int64(n),
        cuda.as_cuda_array(out2),
        cuda.as_cuda_array(x),
        np.int64(n),
        np.int64(1),
        cuda.as_cuda_array(y),
        np.int64(n),
        np.int64(1),
        alpha,
    ]
    nb_launch = nb_kernel[cfg.grid, cfg.block]

    def numba_call() -> None:
        nb_launch(*nb_args)

    stream = cp.cuda.get_current_stream()

    def raw_sync_call() -> None:  # unified mode's floor: the launch, then wait for it
        launch(fptr, gx, gy, gz, bx, by, bz, 0, stream_ptr, params, 0)
        stream.synchronize()

    offload_call()
    cp.testing.assert_allclose(out, alpha * x + y, rtol=1e-6)
    public = _public_calls(n, x, y, alpha)
    result: dict[str, Any] = {"n": n, "launch": {"grid": cfg.grid, "block": cfg.block}}
    for name, call in (
        ("kernel", raw_call),
        ("kernel+sync", raw_sync_call),
        ("offload", offload_call),
        *public,
        ("cupy-ewk", ewk_call),
        ("numba", numba_call),
    ):
        result[name] = {
            "events_us": _summary(_events_per_call(cp, call)),
            "host_us": _summary(_host_per_call(cp, call)),
        }
    floor = result["kernel"]["events_us"]["median"]
    result["offload_overhead_us"] = result["offload"]["events_us"]["median"] - floor
    for name, _ in public:
        base = result["kernel+sync" if "unified" in name else "kernel"]["events_us"]["median"]
        result[f"{name}_overhead_us"] = result[name]["events_us"]["median"] - base
    return result


PUBLIC = ("compute_g[device]", "compute_g[device,out=]", "compute_g[unified]")


def _public_calls(n: int, x: Any, y: Any, alpha: Any) -> list[tuple[str, Callable[[], object]]]:
    """Warm ``ol.compute_g`` calls (the public API, driver included) on device-resident
    inputs, each checked once against CuPy. Each call sets ``ol.config.memory`` only when
    it differs: an assignment drops the cached ``CompileOptions``, which would make every
    call miss the driver's memo."""
    import cupy as cp

    import offload as ol

    def element(i: int) -> Any:
        return alpha * x[i] + y[i]

    def make(mode: str, **kw: Any) -> Callable[[], object]:
        config = ol.config

        def call() -> object:
            if config.memory != mode:
                config.memory = mode
            return ol.compute_g(n, element, **kw)

        cp.testing.assert_allclose(cp.asarray(call()), alpha * x + y, rtol=1e-6)
        return call

    out = cp.empty(n, dtype=cp.float32)
    return [
        ("compute_g[device]", make("device")),
        ("compute_g[device,out=]", make("device", out=out)),
        ("compute_g[unified]", make("unified")),
    ]


def compile_times() -> dict[str, Any]:
    from offload.options import CompileOptions
    from offload.ptx.backend import GPUBackend
    from offload.ptx.compile import compile_ptx
    from offload.ptx.kernel_source import build_kernel_source
    from offload.ptx.launch import load_function
    from offload.runtime.gpu import device_info, load_cupy
    from tests.ptx.irfixtures import ALL

    cp = load_cupy()
    cc = device_info().cc
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as cache_dir:
        be = GPUBackend(mode="device", cache_dir=cache_dir)
        for name, make in ALL.items():
            fn = make()
            t0 = time.perf_counter()
            be.compile(fn, CompileOptions())
            cold = time.perf_counter() - t0
            ks = build_kernel_source(fn)
            t0 = time.perf_counter()
            ptx = compile_ptx(ks, name, cc)
            ptx_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            load_function(cp, ptx, ks.name)
            load_s = time.perf_counter() - t0
            out[name] = {"cold_compile_s": cold, "compile_ptx_s": ptx_s, "load_s": load_s}
        code = (
            "import sys, time, json\n"
            "t0 = time.perf_counter()\n"
            "from offload.ptx.backend import GPUBackend\n"
            "from offload.options import CompileOptions\n"
            "from tests.ptx.irfixtures import ALL\n"
            "be = GPUBackend(mode='device', cache_dir=sys.argv[1])\n"
            "be.compile(ALL['saxpy'](), CompileOptions())\n"
            "t_import = time.perf_counter() - t0\n"
            "res = {}\n"
            "for name, make in ALL.items():\n"
            "    fn = make(); t = time.perf_counter(); be.compile(fn, CompileOptions())\n"
            "    res[name] = time.perf_counter() - t\n"
            "print(json.dumps({'first_call_incl_imports_s': t_import, 'per_kernel_s': res,"
            " 'disk_hits': be.cache.stats.disk_hits, 'misses': be.cache.stats.misses,"
            " 'cubin_loads': be.cache.stats.cubin_loads}))\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code, cache_dir],
            capture_output=True,
            text=True,
            check=True,
            env=dict(os.environ),
        )
        out["fresh_process"] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    from offload.runtime.gpu import device_info

    dev = device_info()
    report: dict[str, Any] = {"device": dev.name, "cc": dev.cc, "sm_count": dev.sm_count}
    report["launch"] = [launch_overhead(n) for n in (1 << 10, 1 << 24)]
    report["compile"] = compile_times()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    print(f"\n== offload GPU overhead on {dev.name} (us per call, median [q1-q3], CUDA events) ==")
    for lo in report["launch"]:
        print(f"n={lo['n']}: grid={lo['launch']['grid']} block={lo['launch']['block']}")
        for name in ("kernel", "kernel+sync", "offload", *PUBLIC, "cupy-ewk", "numba"):
            e, h = lo[name]["events_us"], lo[name]["host_us"]
            print(
                f"  {name:23s} {e['median']:8.2f} [{e['q1']:.2f}-{e['q3']:.2f}]"
                f"   host {h['median']:7.2f}"
            )
        print(f"  offload (backend) - kernel = {lo['offload_overhead_us']:.2f} us")
        for name in PUBLIC:
            floor = "kernel+sync" if "unified" in name else "kernel"
            print(f"  {name} - {floor} = {lo[name + '_overhead_us']:.2f} us (target <= 5)")
    print("== compile (s): cold = source->PTX->loaded; fresh process = disk-cache hit ==")
    fresh = report["compile"]["fresh_process"]
    for name, c in report["compile"].items():
        if name == "fresh_process":
            continue
        print(
            f"  {name:18s} cold {c['cold_compile_s']:.3f}  compile_ptx {c['compile_ptx_s']:.3f}  "
            f"load {c['load_s']:.4f}  "
            f"fresh-process hit {fresh['per_kernel_s'].get(name, float('nan')):.4f}"
        )
    print(
        f"  fresh process, first kernel incl. imports: {fresh['first_call_incl_imports_s']:.2f} s; "
        f"disk hits {fresh['disk_hits']}, misses {fresh['misses']}, "
        f"loaded from cubin {fresh['cubin_loads']}"
    )


if __name__ == "__main__":
    # Run as a script: put the repository root (two levels above benchmarks/lab/) first.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    main()
