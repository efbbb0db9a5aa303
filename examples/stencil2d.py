"""A 2-D stencil: a 3x3 blur whose weights are a small array frozen with ``ol.use``.

The element function reads its neighbours with clamped indices (``min``/``max``) and
multiplies by captured weights in a ``for`` loop over ``range``. ``ol.use`` freezes the
weights (read-only; on the GPU the kernel is specialised on their contents).

Run: ``python examples/stencil2d.py [s|p|g]`` (or ``OFFLOAD_EXAMPLE_TARGET``);
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
    h, w = (10, 12) if small else (1000, 1200)
    image = np.random.default_rng(1).random((h, w))
    weights = ol.use(np.array([[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]) / 16.0)

    def blur(i, j):
        acc = 0.0
        for di in range(3):
            for dj in range(3):
                y = min(max(i + di - 1, 0), h - 1)
                x = min(max(j + dj - 1, 0), w - 1)
                acc += weights[di, dj] * image[y, x]
        return acc

    result = np.asarray(compute((h, w), blur))

    padded = np.pad(image, 1, mode="edge")
    expected = np.zeros_like(image)
    for di in range(3):
        for dj in range(3):
            expected += weights[di, dj] * padded[di : di + h, dj : dj + w]
    np.testing.assert_allclose(result, expected, rtol=1e-12)
    print(f"stencil2d on {target}: {h}x{w}, mean {result.mean():.6f}")
    return result


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
