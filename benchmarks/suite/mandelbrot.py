"""Accelerate mandelbrot, limit view (SPEC §4): a bounded while-loop per pixel, 1 pass."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.suite.common import Benchmark, Bound, Check, Outputs

LIMIT_VIEW = (-0.5, 0.0, -0.25, 0.25)
"""x0, x1, y0, y1: every point reaches the limit here (the worst case)."""
FULL_VIEW = (-2.25, 0.75, -0.75, 0.75)


@dataclass(frozen=True)
class Params:
    width: int
    height: int
    limit: int = 255
    view: tuple[float, float, float, float] = LIMIT_VIEW
    iters: int = 1


class Mandelbrot(Benchmark):
    name = "mandelbrot"
    kind = "1"
    bound_by = "compute"
    sizes = {
        "tiny": Params(width=8, height=4, limit=20),
        "quick": Params(width=256, height=128),
        "paper": Params(width=2048, height=1024),
    }

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        x0, x1, y0, y1 = params.view
        return {
            "params": params,
            "x0": np.float32(x0), "dx": np.float32((x1 - x0) / params.width),
            "y0": np.float32(y0), "dy": np.float32((y1 - y0) / params.height),
        }  # fmt: skip

    def bind(self, inputs: dict[str, Any]) -> Bound:
        params: Params = inputs["params"]
        x0, dx, y0, dy = inputs["x0"], inputs["dx"], inputs["y0"], inputs["dy"]
        limit = params.limit

        def escape(y: int, x: int) -> Any:
            cr = x0 + x * dx
            ci = y0 + y * dy
            zr = np.float32(0.0)
            zi = np.float32(0.0)
            i = 0
            while i < limit:
                zr2 = zr * zr - zi * zi + cr
                zi2 = 2.0 * zr * zi + ci
                if zr2 * zr2 + zi2 * zi2 > 4.0:
                    break  # keep the old (z, i), as Accelerate's step does
                zr = zr2
                zi = zi2
                i += 1
            return i

        shape = (params.height, params.width)
        return Bound(run=lambda compute: (compute(shape, escape, dtype=np.int32),))

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        params: Params = inputs["params"]
        y, x = np.meshgrid(np.arange(params.height), np.arange(params.width), indexing="ij")
        cr = inputs["x0"] + x.astype(np.float32) * inputs["dx"]
        ci = inputs["y0"] + y.astype(np.float32) * inputs["dy"]
        zr = np.zeros_like(cr)
        zi = np.zeros_like(ci)
        count = np.zeros(cr.shape, dtype=np.int32)
        active = np.ones(cr.shape, dtype=bool)
        for _ in range(params.limit):
            zr2 = zr * zr - zi * zi + cr
            zi2 = np.float32(2.0) * zr * zi + ci
            active &= ~(zr2 * zr2 + zi2 * zi2 > 4.0)
            zr = np.where(active, zr2, zr)
            zi = np.where(active, zi2, zi)
            count += active
        return (count,)

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        got = np.asarray(outputs[0]).astype(np.int64)
        diff = np.abs(got - ref[0])
        if inputs["params"].view == LIMIT_VIEW:
            bad = int(np.sum(diff != 0))
            return Check(bad == 0, f"exact counts: {bad} mismatches, mean {got.mean():.4g}")
        frac = float(np.mean(diff != 0))
        ok = frac <= 1e-3 and int(diff.max()) <= 1
        return Check(ok, f"{frac:.3%} differ (<=0.1%, by <=1)")

    def flops(self, params: Params) -> float:
        return 10.0 * params.limit * params.width * params.height

    def bytes(self, params: Params) -> float:
        return 12.0 * params.width * params.height


BENCHMARK = Mandelbrot()
