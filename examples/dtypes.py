"""Result dtypes: inferred by NumPy 2's rules, or chosen with ``dtype=``.

A Python float times a float32 element stays float32 (NEP 50); ``dtype=np.float64``
computes the same function into a float64 result; an int8 result wraps like NumPy's.

Run: ``python examples/dtypes.py [s|p|g]`` (or ``OFFLOAD_EXAMPLE_TARGET``);
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
    n = 40 if small else 100_000
    a = np.linspace(-1.0, 1.0, n, dtype=np.float32)
    small_ints = (np.arange(n) % 200).astype(np.int8)  # wraps past 127, as NumPy does

    def half(i):
        return a[i] * 0.5  # float32 * Python float -> float32

    inferred = compute(n, half)
    assert inferred.dtype == np.float32, inferred.dtype
    np.testing.assert_array_equal(np.asarray(inferred), a * 0.5)

    wide = compute(n, half, dtype=np.float64)
    assert wide.dtype == np.float64, wide.dtype
    np.testing.assert_array_equal(np.asarray(wide), (a * 0.5).astype(np.float64))

    def doubled(i):
        return small_ints[i] * np.int8(2)  # int8 arithmetic wraps

    wrapped = compute(n, doubled)
    assert wrapped.dtype == np.int8, wrapped.dtype
    np.testing.assert_array_equal(np.asarray(wrapped), small_ints * np.int8(2))
    print(f"dtypes on {target}: {inferred.dtype}, {wide.dtype}, {wrapped.dtype}")
    return np.asarray(wide)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
