"""Where a warm replayed collective call's host time goes, GPU only (issue 16/20):

    python -m benchmarks.lab.replay_split [--sizes 12,16,20] [--calls 3000]

For ``compute_g(fold_all(add, 0.0, x))`` (device mode, node kept) and ``cupy.sum``: µs
per call of the whole call, of the replay lane's lookup (tree entry, captured values,
signature), and of each recorded step alone with the arguments of the last call -- all
pipelined (calls back to back, one synchronise), so each figure is host time where the
kernels are shorter.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from benchmarks.lab.fold_bw import _pipelined


def _launch_floor(cp: Any, frozen: Any, calls: int) -> list[tuple[str, float]]:
    """The driver call alone: CuPy's ``launchKernel`` wrapper, and ``cuLaunchKernel``
    through ctypes, with a frozen launch's parameters."""
    import ctypes

    gx, gy, gz, bx, by, bz = frozen.dims
    addr, fn = frozen.address[0], frozen.fn_ptr
    stream = cp.cuda.get_current_stream().ptr
    launch = cp.cuda.driver.launchKernel
    rows = [
        (
            "    cupy launchKernel",
            _pipelined(cp, lambda: launch(fn, gx, gy, gz, bx, by, bz, 0, stream, addr, 0), calls),
        )
    ]
    lib = ctypes.CDLL("libcuda.so.1")
    cu = lib.cuLaunchKernel
    u = ctypes.c_uint
    cu.argtypes = [
        ctypes.c_void_p,
        u,
        u,
        u,
        u,
        u,
        u,
        u,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    rows.append(
        (
            "    ctypes cuLaunchKernel",
            _pipelined(cp, lambda: cu(fn, gx, gy, gz, bx, by, bz, 0, stream, addr, None), calls),
        )
    )
    rows.append(
        ("    get_current_stream", _pipelined(cp, lambda: cp.cuda.get_current_stream().ptr, calls))
    )
    return rows


def add(a: Any, b: Any) -> Any:
    return a + b


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="12,16,20")
    ap.add_argument("--calls", type=int, default=3000)
    args = ap.parse_args()
    import cupy as cp

    import offload as ol
    from offload import driver, replay
    from offload.acc.base import Context
    from offload.targets import GPU

    ol.config.memory = "device"
    rng = np.random.default_rng(0)
    for e in (int(s) for s in args.sizes.split(",")):
        x = cp.asarray(rng.uniform(-1, 1, 1 << e).astype(np.float32))
        node = ol.fold_all(add, 0.0, x)
        ol.compute_g(node)
        options = ol.config.compile_options()
        ctx = Context(GPU.resolve(options), options, ol.config.determinism)
        entry = driver.tree_entry(ctx.backend, node)
        values = entry.fetch(node)
        key = (ctx.options, ctx.determinism, replay.signature(values))
        plan = entry.plans[key]
        rows = [("cupy.sum", _pipelined(cp, lambda: cp.sum(x), args.calls))]
        rows.append(("compute_g", _pipelined(cp, lambda: ol.compute_g(node), args.calls)))
        rows.append(
            (
                "compute_g, a new node",
                _pipelined(cp, lambda: ol.compute_g(ol.fold_all(add, 0.0, x)), args.calls),
            )
        )
        rows.append(
            (
                "replay.compute",
                _pipelined(cp, lambda: replay.compute(ctx, node, None, None), args.calls),
            )
        )

        def lookup() -> Any:
            ent = driver.tree_entry(ctx.backend, node)
            vals = ent.fetch(node)
            return ent.plans.get((ctx.options, ctx.determinism, replay.signature(vals)))

        rows.append(("lookup", _pipelined(cp, lookup, args.calls)))
        rows.append(("plan.run", _pipelined(cp, lambda: plan.run(values), args.calls)))
        done: list[Any] = []
        for i, step in enumerate(plan.steps):
            ins = [replay._fetch(r, values, done) for r in step.refs]
            done.append(step.fn(*ins))
            name = f"step {i} {type(step.fn).__name__}"
            rows.append((name, _pipelined(cp, lambda f=step.fn, a=ins: f(*a), args.calls)))
            fn = step.fn
            if isinstance(fn, driver.Launch):
                be, comp = fn.backend, fn.compiled
                outs = be.allocate(fn.shape, comp.dtypes)
                prep = be.prepare_captures(ins)
                rows.append(
                    (
                        "  allocate",
                        _pipelined(cp, lambda: be.allocate(fn.shape, comp.dtypes), args.calls),
                    )
                )
                rows.append(
                    (
                        "  prepare_captures",
                        _pipelined(cp, lambda: be.prepare_captures(ins), args.calls),
                    )
                )
                rows.append(
                    (
                        "  kernel.launch",
                        _pipelined(
                            cp, lambda: comp.kernel.launch(fn.shape, outs, prep), args.calls
                        ),
                    )
                )
            elif fn._fast:
                frozen = fn._fast[1]
                ptrs = [p.data.ptr for p in ins] + [cp.empty(1, dt).data.ptr for dt in fn.dts]
                rows.append(("  empty", _pipelined(cp, lambda: cp.empty(1, fn.dts[0]), args.calls)))
                rows.append(("  frozen launch", _pipelined(cp, lambda: frozen(*ptrs), args.calls)))
                rows += _launch_floor(cp, frozen, args.calls)
        print(f"== 2^{e}")
        for name, us in rows:
            print(f"  {name:28s} {us:8.2f} us")


if __name__ == "__main__":
    main()
