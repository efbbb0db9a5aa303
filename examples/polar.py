"""A tuple result: an element function returning two values gives two arrays (struct of
arrays), here the polar coordinates ``(r, theta)`` of points given in two arrays.

A tuple of ``out=`` arrays receives such a result without allocating.

Run: ``python examples/polar.py [s|p|g]`` (or ``OFFLOAD_EXAMPLE_TARGET``);
``OFFLOAD_EXAMPLE_SMALL=1`` picks a small size.
"""

from __future__ import annotations

import os
import sys

import numpy as np

import offload as ol


def main(target: str | None = None, small: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    target = target or os.environ.get("OFFLOAD_EXAMPLE_TARGET", "p")
    small = os.environ.get("OFFLOAD_EXAMPLE_SMALL") == "1" if small is None else small
    compute = {"s": ol.compute_s, "p": ol.compute_p, "g": ol.compute_g}[target]
    n = 50 if small else 1_000_000
    rng = np.random.default_rng(2)
    xs = rng.normal(size=n).astype(np.float32)
    ys = rng.normal(size=n).astype(np.float32)

    def to_polar(i):
        x, y = xs[i], ys[i]
        # NumPy's functions keep float32 (math.sqrt would return a Python float: float64).
        return np.sqrt(x * x + y * y), np.arctan2(y, x)

    r, theta = compute(n, to_polar)  # two float32 arrays
    assert r.dtype == theta.dtype == np.float32
    np.testing.assert_allclose(np.asarray(r), np.hypot(xs, ys), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(theta), np.arctan2(ys, xs), rtol=1e-5, atol=1e-6)

    # Again into the same two arrays: nothing is allocated.
    again = compute(n, to_polar, out=(r, theta))
    assert again[0] is r and again[1] is theta
    print(f"polar on {target}: {n} points, mean r {float(np.asarray(r).mean()):.4f}")
    return np.asarray(r), np.asarray(theta)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
