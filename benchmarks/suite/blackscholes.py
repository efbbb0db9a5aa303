"""blackscholes (SPEC §3.5): European option prices, straight-line float32 code, (R)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.suite.common import Benchmark, Bound, Check, Outputs, recompute

INV_SQRT_2PI = 0.39894228040143270286


@dataclass(frozen=True)
class Params:
    n: int
    iters: int


def cndf(x: Any) -> Any:
    """Cumulative normal distribution (the original's polynomial approximation)."""
    pos = np.float32(1.0) if x > 0 else np.float32(0.0)
    sig = np.float32(1.0) if x > 0 else np.float32(-1.0)
    xp = sig * x
    tmp = INV_SQRT_2PI * np.exp(-0.5 * xp * xp)
    k = 1.0 / (1.0 + 0.2316419 * xp)
    poly = k * (
        0.319381530 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))
    )
    return pos - sig * tmp * poly


def cndf64(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The same formula vectorised in float64 (the reference)."""
    pos = (x > 0).astype(np.float64)
    sig = 2 * pos - 1
    xp = sig * x
    tmp = INV_SQRT_2PI * np.exp(-0.5 * xp * xp)
    k = 1 / (1 + 0.2316419 * xp)
    poly = k * (
        0.319381530 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))
    )
    return pos - sig * tmp * poly  # type: ignore[no-any-return]


class BlackScholes(Benchmark):
    name = "blackscholes"
    kind = "R"
    sizes = {
        "tiny": Params(n=64, iters=2),
        "quick": Params(n=100_000, iters=3),
        "paper": Params(n=10_000_000, iters=100),
    }

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        rng = rng or np.random.default_rng(5)
        n = params.n
        arrays = {
            "s": rng.uniform(42.0, 100.0, n), "k": rng.uniform(40.0, 110.0, n),
            "r": rng.uniform(0.0275, 0.1, n), "v": rng.uniform(0.05, 0.65, n),
            "t": rng.uniform(0.05, 1.0, n), "put": (rng.random(n) < 0.5).astype(np.float64),
        }  # fmt: skip
        return {"params": params, **{k: a.astype(np.float32) for k, a in arrays.items()}}

    def bind(self, inputs: dict[str, Any]) -> Bound:
        s_, k_, r_, v_, t_, put_ = (inputs[k] for k in ("s", "k", "r", "v", "t", "put"))
        params: Params = inputs["params"]

        def price(i: int) -> Any:
            s, k, r, v, t = s_[i], k_[i], r_[i], v_[i], t_[i]
            log_t = np.log(s / k)
            pw = 0.5 * v * v
            den = v * np.sqrt(t)
            d1 = ((r + pw) * t + log_t) / den
            d2 = d1 - den
            fv = k * np.exp(-r * t)
            call = s * cndf(d1) - fv * cndf(d2)
            return call + put_[i] * (fv - s)

        return Bound(run=lambda compute: recompute(compute, (params.n,), price, params.iters))

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        s, k, r, v, t, put = (
            np.asarray(inputs[n], np.float64) for n in ("s", "k", "r", "v", "t", "put")
        )
        den = v * np.sqrt(t)
        d1 = ((r + 0.5 * v * v) * t + np.log(s / k)) / den
        d2 = d1 - den
        fv = k * np.exp(-r * t)
        call = s * cndf64(d1) - fv * cndf64(d2)
        return (call + put * (fv - s),)

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        got = np.asarray(outputs[0], dtype=np.float64)
        delta = np.abs(got - ref[0])
        mx, l1 = float(delta.max()), float(delta.sum() / np.abs(ref[0]).sum())
        ok = bool(np.all(np.isfinite(got))) and mx <= 5e-4 and l1 <= 1e-5
        return Check(
            ok, f"max|d| {mx:.2g} (<=5e-4), L1 rel {l1:.2g} (<=1e-5), sum {got.sum():.10g}"
        )

    def flops(self, params: Params) -> float:
        return 72.0 * params.n

    def bytes(self, params: Params) -> float:
        return 28.0 * params.n


BENCHMARK = BlackScholes()
