"""Mandelbrot set: a ``while`` loop with ``break`` in an element function.

Each element counts the iterations of ``z = z*z + c`` before ``|z| > 2`` (at most
``max_iter``), with complex arithmetic written on two floats (complex numbers are not in
the language). Shows: a 2-D index space, captured scalars, a data-dependent loop.

Run: ``python examples/mandelbrot.py [s|p|g]`` (or ``OFFLOAD_EXAMPLE_TARGET``);
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
    h, w = (12, 16) if small else (600, 800)
    max_iter = 20 if small else 100
    x0, y0, dx, dy = -2.0, -1.2, 3.0 / w, 2.4 / h

    def escape(i, j):
        cr = x0 + j * dx
        ci = y0 + i * dy
        zr = 0.0
        zi = 0.0
        n = 0
        while n < max_iter:
            zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
            if zr * zr + zi * zi > 4.0:
                break
            n += 1
        return n

    counts = np.asarray(compute((h, w), escape))

    # The same in NumPy, one iteration over the whole plane at a time.
    c = (x0 + np.arange(w) * dx)[None, :] + 1j * (y0 + np.arange(h) * dy)[:, None]
    z = np.zeros_like(c)
    expected = np.full(c.shape, max_iter)
    alive = np.ones(c.shape, dtype=bool)
    for n in range(max_iter):
        z[alive] = z[alive] ** 2 + c[alive]
        escaped = alive & (np.abs(z) > 2.0)
        expected[escaped] = n
        alive &= ~escaped
    # Rounding in |z|^2 vs |z| can move a point on the border by one iteration.
    assert np.mean(counts != expected) < 0.01, np.mean(counts != expected)
    print(f"mandelbrot on {target}: {h}x{w}, {int((counts == max_iter).sum())} points inside")
    return counts


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
