"""A ping-pong iteration with ``out=``: 1-D heat diffusion that allocates nothing per step.

Two buffers swap roles every step: the element function reads ``cur`` and the result is
written into ``nxt`` with ``out=``. Both buffers come from the target itself (a first
``compute_*`` call), so on the GPU they live where the kernel runs. The captured names are
re-read at every call: rebinding ``cur``/``nxt`` is seen (captured values are never stale).

Run: ``python examples/heat_pingpong.py [s|p|g]`` (or ``OFFLOAD_EXAMPLE_TARGET``);
``OFFLOAD_EXAMPLE_SMALL=1`` picks a small size.
"""

from __future__ import annotations

import os
import sys

import numpy as np

import offload as ol


def main(target: str | None = None, small: bool | None = None) -> np.ndarray:
    target = target or os.environ.get("OFFLOAD_EXAMPLE_TARGET", "p")
    small = os.environ.get("OFFLOAD_EXAMPLE_SMALL") == "1" if small is None else small
    compute = {"s": ol.compute_s, "p": ol.compute_p, "g": ol.compute_g}[target]
    n, steps = (32, 5) if small else (100_000, 200)
    alpha = 0.25
    start = np.zeros(n)
    start[n // 2] = 1.0

    def initial(i):
        return start[i]

    cur = compute(n, initial)
    nxt = compute(n, initial)

    def step(i):
        left = cur[i - 1] if i > 0 else cur[i]
        right = cur[i + 1] if i < n - 1 else cur[i]
        return cur[i] + alpha * (left - 2.0 * cur[i] + right)

    for _ in range(steps):
        compute(n, step, out=nxt)
        cur, nxt = nxt, cur
    result = np.asarray(cur)

    expected = start.copy()
    for _ in range(steps):
        padded = np.concatenate(([expected[0]], expected, [expected[-1]]))
        expected = expected + alpha * (padded[:-2] - 2.0 * expected + padded[2:])
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-15)
    print(f"heat_pingpong on {target}: {n} cells, {steps} steps, total heat {result.sum():.6f}")
    return result


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
