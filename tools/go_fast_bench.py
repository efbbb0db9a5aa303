"""numba's go_fast (its '5 minute guide': ``trace += np.tanh(a[k, k])`` over the diagonal,
then ``a + trace``) as an element function, against ``numba.njit`` of the original loop:
the median of warm calls at 200x200 (or ``--n``), in milliseconds, and its ratio to
``numba.njit``'s median (issue 17's target: 2x or less). Each call is timed whole, as a user
calls it (``compute_p`` with whichever thread count ``ThreadChoice`` picks for the size and
the machine's load; the compile is not timed: the first call is a warm-up).

  python tools/go_fast_bench.py            # compute_s, compute_p, numba.njit, and
                                           # a + trace with the trace given (the floor)
  python tools/go_fast_bench.py --no-hoist # the same with the hoist pass disabled

The element function recomputes the trace for every element unless the trace loop is
hoisted out of the element loop (``offload.opt.hoist``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _times_ms(call, repeat: int) -> tuple[float, float]:
    """Median and minimum of ``repeat`` warm calls, in milliseconds."""
    call()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3, min(times) * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--no-hoist", action="store_true", help="disable the hoist pass")
    args = p.parse_args()
    import numba

    import offload as ol

    if args.no_hoist:
        ol.config.disabled_passes = frozenset({"hoist"})
    a = np.arange(args.n * args.n, dtype=np.float64).reshape(args.n, args.n) / args.n**2

    @numba.njit
    def go_fast_numba(a):
        trace = 0.0
        for i in range(a.shape[0]):
            trace += np.tanh(a[i, i])
        return a + trace

    def go_fast(i, j):
        trace = 0.0
        for k in range(a.shape[0]):
            trace += np.tanh(a[k, k])
        return a[i, j] + trace

    trace = float(np.tanh(np.diag(a)).sum())

    def plus_trace(i, j):  # the same element work with nothing to hoist: the floor
        return a[i, j] + trace

    want = go_fast_numba(a)
    shape = (args.n, args.n)
    base = 0.0
    for name, call in (
        ("numba.njit", lambda: go_fast_numba(a)),
        ("compute_s", lambda: ol.compute_s(shape, go_fast)),
        ("compute_p", lambda: ol.compute_p(shape, go_fast)),
        ("compute_s a+t", lambda: ol.compute_s(shape, plus_trace)),
        ("compute_p a+t", lambda: ol.compute_p(shape, plus_trace)),
    ):
        np.testing.assert_allclose(call(), want, rtol=1e-14, atol=1e-14)
        med, low = _times_ms(call, args.repeat)
        base = base or med
        print(
            f"{name:14s} {args.n}x{args.n}: median {med:9.3f} ms  min {low:9.3f} ms"
            f"  {med / base:5.2f}x numba.njit"
        )


if __name__ == "__main__":
    main()
