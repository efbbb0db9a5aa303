"""Black-Scholes option pricing with a helper function.

``cndf`` (the cumulative normal distribution) is a plain Python function the element
function calls: offload inlines it. Shows: helper functions, ``math`` functions, float32
arrays staying float32 (NumPy 2 promotion: a Python float times a float32 is float32).

Run: ``python examples/blackscholes.py [s|p|g]`` (or ``OFFLOAD_EXAMPLE_TARGET``);
``OFFLOAD_EXAMPLE_SMALL=1`` picks a small size.
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

import offload as ol

RISKFREE = 0.02
VOLATILITY = 0.30


def cndf(d):
    """The standard normal cumulative distribution (Abramowitz-Stegun 26.2.17)."""
    k = 1.0 / (1.0 + 0.2316419 * abs(d))
    poly = k * (
        0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))
    )
    w = 1.0 - 0.3989422804014327 * math.exp(-0.5 * d * d) * poly
    return w if d > 0 else 1.0 - w


def main(target: str | None = None, small: bool | None = None) -> np.ndarray:
    target = target or os.environ.get("OFFLOAD_EXAMPLE_TARGET", "p")
    small = os.environ.get("OFFLOAD_EXAMPLE_SMALL") == "1" if small is None else small
    compute = {"s": ol.compute_s, "p": ol.compute_p, "g": ol.compute_g}[target]
    n = 64 if small else 1_000_000
    rng = np.random.default_rng(0)
    price = rng.uniform(5.0, 30.0, n).astype(np.float32)
    strike = rng.uniform(1.0, 100.0, n).astype(np.float32)
    years = rng.uniform(0.25, 10.0, n).astype(np.float32)

    def call(i):
        s, x, t = price[i], strike[i], years[i]
        sqrt_t = math.sqrt(t)
        d1 = (math.log(s / x) + (RISKFREE + 0.5 * VOLATILITY * VOLATILITY) * t) / (
            VOLATILITY * sqrt_t
        )
        d2 = d1 - VOLATILITY * sqrt_t
        return s * cndf(d1) - x * math.exp(-RISKFREE * t) * cndf(d2)

    result = np.asarray(compute(n, call))

    def np_cndf(d):
        k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
        poly = k * (
            0.31938153
            + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))
        )
        w = 1.0 - 0.3989422804014327 * np.exp(-0.5 * d * d) * poly
        return np.where(d > 0, w, 1.0 - w)

    sqrt_t = np.sqrt(years)
    d1 = (np.log(price / strike) + (RISKFREE + 0.5 * VOLATILITY**2) * years) / (VOLATILITY * sqrt_t)
    d2 = d1 - VOLATILITY * sqrt_t
    expected = price * np_cndf(d1) - strike * np.exp(-RISKFREE * years) * np_cndf(d2)
    assert result.dtype == np.float32, result.dtype
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-4)
    print(f"blackscholes on {target}: {n} options, mean call price {result.mean():.4f}")
    return result


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
