"""Cold compile time of a 9-way ``if``/``elif`` float32 stencil (issue 17: it took 9-14 s
cold on ``compute_p``; the target is 2 s or less).

    python tools/stencil9_compile.py              # 3 fresh processes per target
    python tools/stencil9_compile.py --repeat 5 --n 256

``stencil9`` is a 5-point heat step with reflecting edges, written as such code often is:
one arm per corner, one per edge, one for the interior (nine in all), every value float32.
Each figure is the first ``compute_s`` or ``compute_p`` call of it in a fresh Python process
with an empty ``OFFLOAD_CACHE_DIR``, after numba's start-up: checks, lowering, passes, kernel
emission, numba's compile and one launch over ``n x n`` (``tools/compile_scaling.py``'s
``cold_seconds``); ``compute_p``'s is its parallel (``cpu-par``) kernel, whatever the size.
Before timing, the result of each target is checked against CPython running ``stencil9``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tests.cpu.stencil9 import make_stencil9

N = 64


def timing_case(n: str, _folder: str) -> tuple[tuple[int, ...], Any]:
    """``cold_seconds``'s factory: ``stencil9`` over an ``n x n`` grid."""
    u = np.random.default_rng(0).random((int(n), int(n)), dtype=np.float32)
    return u.shape, make_stencil9(u)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=N)
    p.add_argument("--repeat", type=int, default=3, help="fresh processes per target")
    args = p.parse_args()
    from compile_scaling import cold_seconds

    import offload as ol

    shape, fn = timing_case(str(args.n), "")
    want = np.array([[fn(i, j) for j in range(shape[1])] for i in range(shape[0])])
    assert want.dtype == np.float32
    for compute in (ol.compute_s, ol.compute_p):
        np.testing.assert_array_equal(compute(shape, fn), want, strict=True)
    for target in "sp":
        times = [
            cold_seconds(target, "stencil9_compile:timing_case", str(args.n))
            for _ in range(args.repeat)
        ]
        shown = " ".join(f"{t:.2f}" for t in times)
        print(
            f"compute_{target} cold, {args.n}x{args.n}: median {statistics.median(times):.2f} s"
            f"  ({shown})",
            flush=True,
        )


if __name__ == "__main__":
    main()
