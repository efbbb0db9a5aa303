"""Accelerate n-body (SPEC §4): accelerations with masses and softening, 1 pass."""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.suite.common import Bound, Outputs
from benchmarks.suite.nbody import NBody, Params, pair_sums, sample_indices

EPS = 0.01


class NBodyAccelerate(NBody):
    name = "nbody-accelerate"
    sizes = {"tiny": Params(n=24), "quick": Params(n=2000), "paper": Params(n=32_768)}

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        rng = rng or np.random.default_rng(13)
        p = rng.uniform(-1.0, 1.0, (params.n, 3)).astype(np.float32)
        m = rng.uniform(0.5, 1.5, params.n).astype(np.float32)
        return {"params": params, "x": p[:, 0].copy(), "y": p[:, 1].copy(),
                "z": p[:, 2].copy(), "m": m}  # fmt: skip

    def bind(self, inputs: dict[str, Any]) -> Bound:
        px, py, pz, pm = inputs["x"], inputs["y"], inputs["z"], inputs["m"]
        n = inputs["params"].n
        eps2 = np.float32(EPS * EPS)

        def accel(i: int) -> tuple[Any, Any, Any]:
            # accel eps pmi pmj = m_j * r / (|r|^2 + eps^2)^(3/2)   (Common/Body.hs)
            xi, yi, zi = px[i], py[i], pz[i]
            ax = np.float32(0.0)
            ay = np.float32(0.0)
            az = np.float32(0.0)
            for j in range(len(px)):
                rx = px[j] - xi
                ry = py[j] - yi
                rz = pz[j] - zi
                invr = 1.0 / np.sqrt(rx * rx + ry * ry + rz * rz + eps2)
                s = pm[j] * invr * invr * invr
                ax += s * rx
                ay += s * ry
                az += s * rz
            return ax, ay, az

        return Bound(run=lambda compute: tuple(compute((n,), accel)))

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        pos = np.stack([inputs["x"], inputs["y"], inputs["z"]], axis=1)
        idx = sample_indices(len(pos))
        acc, mag = pair_sums(pos, np.asarray(inputs["m"]), EPS * EPS, 1.0, idx)
        return (idx, acc, mag)


BENCHMARK = NBodyAccelerate()
