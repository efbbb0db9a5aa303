"""Compile time of the walking variant (``offload/ptx/passes/walk.py``) against the plain one
on large rank-2 functions (no GPU: offload's own passes, not NVVM).

    python -m benchmarks.lab.walk_scaling [--sizes 10,100,300,1000]

Three shapes of ``n`` lines: straight-line reads of neighbouring rows, ``n / 3`` window
loops of 5 taps each (the loops the walk unrolls, up to ``walk.MAX_UNROLLED_OPS``), and
``n / 4`` branches on boundary tests of the row (the checked walk: each branch checked,
and a fallback of four copies of the function, while it has at most
``walk.MAX_UNROLLED_OPS`` ops).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _source(n: int, shape: str) -> str:
    lines = [
        "import numpy as np",
        "X = np.ones((64, 64), np.float32)",
        "def f(i, j):",
        "    h = X.shape[0]",
        "    s = np.float32(0.0)",
    ]
    if shape == "straight":
        lines += [
            f"    s += X[min(i + {k % 7}, h - 1), j] * np.float32({k % 5 + 1})" for k in range(n)
        ]
    elif shape == "halo":
        for k in range(max(1, n // 4)):
            lines += [
                f"    if i > {k % 4} and i < h - {k % 3 + 1}:",
                f"        s += X[i - 1, j] * np.float32({k % 5 + 1})",
                "    else:",
                "        s -= X[i, j]",
            ]
    else:
        for k in range(max(1, n // 3)):
            lines += [
                "    for a in range(5):",
                f"        s += X[min(max(i + a - 2, 0), h - 1), j] * np.float32({k % 3 + 1})",
            ]
    return "\n".join([*lines, "    return s"]) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10,100,300,1000")
    args = ap.parse_args()
    from offload.lowering import check_and_lower
    from offload.opt.manager import run_pipeline
    from offload.options import CompileOptions
    from offload.ptx.plan import GPU_PLAN, INDEX

    opts = CompileOptions()
    shapes = {s.name: s for s in GPU_PLAN.shape_variants(2)}
    walk = next(s for name, s in shapes.items() if name.startswith("walk"))
    tmp = Path(tempfile.mkdtemp())
    sys.path.insert(0, str(tmp))
    for shape in ("straight", "loops", "halo"):
        for n in (int(s) for s in args.sizes.split(",")):
            name = f"walk_scaling_{shape}_{n}"
            (tmp / f"{name}.py").write_text(_source(n, shape))
            fn: Any = importlib.import_module(name).f
            ir = run_pipeline(check_and_lower(fn, 2).ir, opts)
            t0 = time.perf_counter()
            walked = GPU_PLAN.kernel_ir(ir, opts, INDEX["unit32"], walk)
            t1 = time.perf_counter()
            GPU_PLAN.kernel_ir(ir, opts, INDEX["unit32"], shapes["plain"])
            t2 = time.perf_counter()
            ops = sum(len(b.ops) for b in walked.blocks) if walked is not None else 0
            print(
                f"{shape:9s} {n:5d} lines: walk {t1 - t0:7.3f} s ({ops} ops), "
                f"plain {t2 - t1:7.3f} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
