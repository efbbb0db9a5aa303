"""Register-blocking study (GPU machine): matrix-mult's element function under each
blocking of ``offload.opt.jam``, with the rolled loop (``offload.opt.reroll``, the default)
and the unrolled one, against cuBLAS in the same run.

The kernel IR's blockings are ``offload.ptx.variants.BLOCKINGS``; this study sets one per row
(the driver's dispatch table is cleared, so it compiles anew; the kernel cache key is the
kernel IR, which names the blocking). Kernel time only: device mode, inputs resident,
the product's dot kernel alone (``Bt`` made once, outside the timing). Every result is
checked against NumPy first.

    python -m benchmarks.lab.blocking [--n 2048] [--repeat 15] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

import offload as ol
from benchmarks.timing import summarise, time_gpu
from offload import driver
from offload.ptx import variants

ROWS: list[tuple[str, tuple[int, int] | None, frozenset[str]]] = [
    ("staged, not blocked", None, frozenset({"jam"})),
    ("blocked 2x2", (2, 2), frozenset()),
    ("blocked 4x4", (4, 4), frozenset()),
    ("blocked 4x8", (4, 8), frozenset()),
    ("blocked 8x8 (the default)", (8, 8), frozenset()),
    ("blocked 4x4, unrolled loop", (4, 4), frozenset({"reroll"})),
    ("blocked 8x8, unrolled loop", (8, 8), frozenset({"reroll"})),
]


def _dot(a: Any, bt: Any) -> Any:
    def dot(i: int, j: int) -> Any:
        acc = np.float32(0.0)
        for k in range(a.shape[1]):
            acc += a[i, k] * bt[j, k]
        return acc

    return dot


def main() -> None:
    import cupy as cp

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--json")
    args = ap.parse_args()
    n = args.n
    rng = np.random.default_rng(0)
    a_h = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b_h = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    ref = a_h.astype(np.float64) @ b_h.astype(np.float64)
    a, b = cp.asarray(a_h), cp.asarray(b_h)
    bt = cp.ascontiguousarray(b.T)
    ol.config.memory = "device"
    saved_blocking, saved_passes = variants.BLOCKINGS, ol.config.disabled_passes
    rows: list[dict[str, Any]] = []
    try:
        for label, blocking, passes in ROWS:
            variants.BLOCKINGS = (blocking,) if blocking else saved_blocking
            ol.config.disabled_passes = passes
            driver.clear_dispatch_table()  # the same code again: compile it anew
            fn = _dot(a, bt)
            out = ol.compute_g((n, n), fn)
            err = float(np.max(np.abs(cp.asnumpy(out) - ref)))
            samples = time_gpu(
                lambda fn=fn, out=out: ol.compute_g((n, n), fn, out=out), args.repeat
            )
            rows.append({"config": label, "max_abs_err": err, **summarise(samples).as_dict()})
    finally:
        variants.BLOCKINGS, ol.config.disabled_passes = saved_blocking, saved_passes
    c = cp.empty((n, n), cp.float32)
    samples = time_gpu(lambda: cp.matmul(a, b, out=c), args.repeat)
    err = float(np.max(np.abs(cp.asnumpy(c) - ref)))
    rows.append(
        {"config": "cuBLAS (cupy.matmul)", "max_abs_err": err, **summarise(samples).as_dict()}
    )
    best = rows[-1]["median"]
    print(f"matrix-mult dot kernel, n = {n}, {args.repeat} timings each (CUDA events)")
    print("| config | median | IQR | x cuBLAS | max abs err |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['config']} | {r['median'] * 1e6:.0f} us | {r['q1'] * 1e6:.0f}-"
            f"{r['q3'] * 1e6:.0f} us | {r['median'] / best:.2f}x | {r['max_abs_err']:.2e} |"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": n, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
