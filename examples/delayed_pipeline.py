"""Delayed arrays: ``map``, ``zip_with``, ``backpermute``, ``traverse`` and ``reshape``
describe a pipeline lazily; one ``compute_*`` call fuses it into a single kernel (no
intermediate arrays).

The pipeline: scale ``x``, add ``y`` elementwise, reverse the result (``backpermute``),
take a centred difference of it (``traverse``: the element function gets a reader of its
source), and view the 1-D result as a matrix (``reshape``).

Run: ``python examples/delayed_pipeline.py [s|p|g]`` (or ``OFFLOAD_EXAMPLE_TARGET``);
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
    rows, cols = (4, 6) if small else (1000, 1000)
    n = rows * cols
    x = np.linspace(0.0, 1.0, n)
    y = np.cos(np.arange(n, dtype=np.float64))

    scaled = ol.map(lambda v: 3.0 * v, x)
    summed = ol.zip_with(lambda a, b: a + b, scaled, y)
    reversed_ = ol.backpermute(n, lambda i: (n - 1 - i,), summed)

    def centred(get, i):
        left = get(i - 1) if i > 0 else get(i)
        right = get(i + 1) if i < n - 1 else get(i)
        return 0.5 * (right - left)

    diff = ol.traverse(reversed_, lambda shape: shape, centred)
    matrix = ol.reshape(diff, (rows, cols))
    result = np.asarray(compute(matrix))  # one fused kernel

    s = (3.0 * x + y)[::-1]
    padded = np.concatenate(([s[0]], s, [s[-1]]))
    expected = (0.5 * (padded[2:] - padded[:-2])).reshape(rows, cols)
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-12)
    print(f"delayed_pipeline on {target}: {rows}x{cols}, max |d| {np.abs(result).max():.6f}")
    return result


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
