"""7pt-stencil (SPEC §3.3): 3-D 7-point contraction on a zero-padded grid, (F) ping-pong."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.suite.common import (
    Benchmark,
    Bound,
    Check,
    Compute,
    Outputs,
    pingpong,
    rel_err_check,
)


@dataclass(frozen=True)
class Params:
    w: int
    h: int
    d: int
    iters: int


W1 = np.float32(0.25)
W2 = np.float32(0.125)


def initial(params: Params) -> np.ndarray[Any, Any]:
    """Padded (d+2, h+2, w+2) grid: -2 + x%2 + (y%2)(z%2) inside, zero halo."""
    z, y, x = np.meshgrid(
        np.arange(params.d + 2), np.arange(params.h + 2), np.arange(params.w + 2), indexing="ij"
    )
    a = (-2 + x % 2 + (y % 2) * (z % 2)).astype(np.float32)
    a[0, :, :] = a[-1, :, :] = 0
    a[:, 0, :] = a[:, -1, :] = 0
    a[:, :, 0] = a[:, :, -1] = 0
    return a


class Stencil7(Benchmark):
    name = "7pt-stencil"
    kind = "F"
    sizes = {
        "tiny": Params(w=5, h=4, d=3, iters=3),
        "quick": Params(w=64, h=64, d=40, iters=4),
        "paper": Params(w=256, h=256, d=160, iters=100),
    }

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        return {"params": params, "a": initial(params), "w1": W1, "w2": W2}

    def bind(self, inputs: dict[str, Any]) -> Bound:
        params: Params = inputs["params"]
        shape = (params.d + 2, params.h + 2, params.w + 2)
        w1, w2 = inputs["w1"], inputs["w2"]
        src = inputs["a"]

        def update(z: int, y: int, x: int) -> Any:
            nz, ny, nx = src.shape[0], src.shape[1], src.shape[2]
            if z == 0 or y == 0 or x == 0 or z == nz - 1 or y == ny - 1 or x == nx - 1:
                return np.float32(0.0)  # the halo stays zero
            faces = (
                src[z - 1, y, x] + src[z + 1, y, x]
                + src[z, y - 1, x] + src[z, y + 1, x]
                + src[z, y, x - 1] + src[z, y, x + 1]
            )  # fmt: skip
            return w1 * src[z, y, x] + w2 * faces

        def set_src(a: Any) -> None:
            nonlocal src
            src = a

        bufs: list[Any] = []

        def run(compute: Compute) -> Outputs:
            return (pingpong(compute, shape, update, set_src, inputs["a"], params.iters, bufs),)

        return Bound(run=run)

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        a = np.asarray(inputs["a"], dtype=np.float64)
        b = np.zeros_like(a)
        w1, w2 = float(inputs["w1"]), float(inputs["w2"])
        for _ in range(inputs["params"].iters):
            c = a[1:-1, 1:-1, 1:-1]
            s = (a[2:, 1:-1, 1:-1] + a[:-2, 1:-1, 1:-1] + a[1:-1, 2:, 1:-1]
                 + a[1:-1, :-2, 1:-1] + a[1:-1, 1:-1, 2:] + a[1:-1, 1:-1, :-2])  # fmt: skip
            b[1:-1, 1:-1, 1:-1] = w1 * c + w2 * s
            a, b = b, a
        return (a,)

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        got = np.asarray(outputs[0])
        c = rel_err_check("max|A-ref64|<=1e-4", got, ref[0], 1.0, 1e-4)
        return Check(c.ok, f"{c.detail}; sum {got.astype(np.float64).sum():.10g}")

    def flops(self, params: Params) -> float:
        return 8.0 * params.w * params.h * params.d

    def bytes(self, params: Params) -> float:
        return 4.0 * (
            (params.w + 2) * (params.h + 2) * (params.d + 2) + params.w * params.h * params.d
        )


BENCHMARK = Stencil7()
