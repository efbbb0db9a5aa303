"""A reduction loop inside an element function: matrix-vector product ``y = A @ x``.

Each element ``y[i]`` runs a ``for k in range(...)`` loop over row ``i`` of ``A``,
accumulating in a local variable. ``A.shape[1]`` is read inside the kernel.

Run: ``python examples/matvec.py [s|p|g]`` (or ``OFFLOAD_EXAMPLE_TARGET``);
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
    m, n = (8, 5) if small else (4000, 3000)
    rng = np.random.default_rng(3)
    a = rng.random((m, n))
    x = rng.random(n)

    def row_dot(i):
        acc = 0.0
        for k in range(a.shape[1]):
            acc += a[i, k] * x[k]
        return acc

    y = np.asarray(compute(m, row_dot))
    np.testing.assert_allclose(y, a @ x, rtol=1e-10)
    print(f"matvec on {target}: {m}x{n}, |y| = {np.linalg.norm(y):.6f}")
    return y


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
