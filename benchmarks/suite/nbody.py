"""nbody (SPEC §3.7): all-pairs accelerations, one loop over bodies per element, 1 pass."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.suite.common import Benchmark, Bound, Check, Outputs


@dataclass(frozen=True)
class Params:
    n: int
    iters: int = 1


SAMPLE = 256
"""Bodies checked against the float64 reference (a full N^2 reference is too slow)."""


def sample_indices(n: int) -> np.ndarray[Any, Any]:
    """The validated bodies (seed 9)."""
    if n <= SAMPLE:
        return np.arange(n)
    return np.sort(np.random.default_rng(9).choice(n, SAMPLE, replace=False))


def pair_sums(
    pos: np.ndarray[Any, Any],
    mass: np.ndarray[Any, Any] | None,
    eps: float,
    scale: float,
    idx: np.ndarray[Any, Any],
) -> tuple[Any, Any]:
    """float64 accelerations of bodies ``idx`` and the sums of |terms| (cancellation bound)."""
    p = pos.astype(np.float64)
    acc = np.zeros((len(idx), 3))
    mag = np.zeros((len(idx), 3))
    m = np.ones(len(p)) if mass is None else mass.astype(np.float64)
    for row, i in enumerate(idx):
        d = p - p[i]
        r2 = (d * d).sum(1) + eps
        terms = d * (m * r2**-1.5)[:, None]
        acc[row] = scale * terms.sum(0)
        mag[row] = scale * np.abs(terms).sum(0)
    return acc, mag


def validate_sample(outputs: Outputs, ref: Outputs) -> Check:
    """``||a_i - ref_i|| <= 1e-3 * ||sum_j |term_ij|||`` on the sampled bodies."""
    idx, acc, mag = ref
    got = np.stack([np.asarray(o, dtype=np.float64)[idx] for o in outputs], axis=1)
    err = np.linalg.norm(got - acc, axis=1)
    bound = 1e-3 * np.linalg.norm(mag, axis=1)
    worst = float(np.max(err / bound))
    ok = bool(np.all(np.isfinite(got))) and worst <= 1.0
    return Check(ok, f"{len(idx)} sampled bodies, worst err {worst:.3g} of tol")


class NBody(Benchmark):
    name = "nbody"
    kind = "1"
    bound_by = "compute"
    sizes = {"tiny": Params(n=24), "quick": Params(n=3000), "paper": Params(n=200_000)}

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        rng = rng or np.random.default_rng(8)
        p = rng.uniform(-1.0, 1.0, (params.n, 3)).astype(np.float32)
        return {"params": params, "x": p[:, 0].copy(), "y": p[:, 1].copy(), "z": p[:, 2].copy()}

    def bind(self, inputs: dict[str, Any]) -> Bound:
        px, py, pz = inputs["x"], inputs["y"], inputs["z"]
        n = inputs["params"].n
        eps = np.float32(0.005)
        g = np.float32(9.8)

        def accel(i: int) -> tuple[Any, Any, Any]:
            xi, yi, zi = px[i], py[i], pz[i]
            ax = np.float32(0.0)
            ay = np.float32(0.0)
            az = np.float32(0.0)
            for j in range(len(px)):
                dx = px[j] - xi
                dy = py[j] - yi
                dz = pz[j] - zi
                d = dx * dx + dy * dy + dz * dz + eps
                inv = 1.0 / np.sqrt(d)  # 1/sqrt(d)^3 == 1/sqrt(d^3) without overflow
                f = inv * inv * inv
                ax += dx * f
                ay += dy * f
                az += dz * f
            return g * ax, g * ay, g * az

        return Bound(run=lambda compute: tuple(compute((n,), accel)))

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        pos = np.stack([inputs["x"], inputs["y"], inputs["z"]], axis=1)
        idx = sample_indices(len(pos))
        acc, mag = pair_sums(pos, None, 0.005, 9.8, idx)
        return (idx, acc, mag)

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        return validate_sample(outputs, ref)

    def flops(self, params: Params) -> float:
        return 20.0 * params.n**2

    def bytes(self, params: Params) -> float:
        return 24.0 * params.n


BENCHMARK = NBody()
