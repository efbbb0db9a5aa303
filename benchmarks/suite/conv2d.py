"""2d-convolution (SPEC §3.2): 5x5 stencil with clamped borders, (F) ping-pong."""

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
    as_tuple,
    combine,
    pingpong,
    rel_err_check,
    to_host,
)

KERNEL = np.array([[2.0 * (-1) ** (a + b) for b in range(5)] for a in range(5)], dtype=np.float32)
KERNEL[2, 2] = -1.0  # the released code's centre; sum(K) = -1, so a constant c -> -c


@dataclass(frozen=True)
class Params:
    rows: int
    cols: int
    iters: int


def make_step(k: Any) -> Any:
    """The element function over a source image captured by closure, and its setter."""
    src = np.zeros((1, 1), dtype=np.float32)

    def convolve(y: int, x: int) -> Any:
        h = src.shape[0]
        w = src.shape[1]
        acc = np.float32(0.0)
        for a in range(5):
            yy = min(max(y + a - 2, 0), h - 1)
            for b in range(5):
                xx = min(max(x + b - 2, 0), w - 1)
                acc += k[a, b] * src[yy, xx]
        return acc

    def set_src(a: Any) -> None:
        nonlocal src
        src = a

    return convolve, set_src


def reference_pass(img: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """One pass in float64 (SPEC's NumPy reference)."""
    h, w = img.shape
    p = np.pad(img.astype(np.float64), 2, mode="edge")
    k = KERNEL.astype(np.float64)
    out = np.zeros((h, w))
    for a in range(5):
        for b in range(5):
            out += k[a, b] * p[a : a + h, b : b + w]
    return out


class Conv2D(Benchmark):
    name = "2d-convolution"
    kind = "F"
    sizes = {
        "tiny": Params(rows=7, cols=9, iters=3),
        "quick": Params(rows=200, cols=300, iters=4),
        "paper": Params(rows=3200, cols=4000, iters=100),
    }

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        rng = rng or np.random.default_rng(2)
        shape = (params.rows, params.cols)
        rnd = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
        return {"params": params, "img": np.ones(shape, np.float32), "rnd": rnd, "k": KERNEL}

    def bind(self, inputs: dict[str, Any]) -> Bound:
        params: Params = inputs["params"]
        shape = (params.rows, params.cols)
        convolve, set_src = make_step(inputs["k"])
        bufs: list[Any] = []

        def run(compute: Compute) -> Outputs:
            return (pingpong(compute, shape, convolve, set_src, inputs["img"], params.iters, bufs),)

        def extra(compute: Compute) -> Check:
            # the constant image exercises nothing data-dependent: one random pass too
            set_src(inputs["rnd"])
            got = to_host(as_tuple(compute(shape, convolve))[0])
            ref = reference_pass(np.asarray(inputs["rnd"]))
            return rel_err_check("random 1-pass", got, ref, 1.0, 1e-4)

        return Bound(run=run, extra=extra)

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        img = np.asarray(inputs["img"], dtype=np.float64)
        iters = inputs["params"].iters
        if np.all(img == img.flat[0]):  # c -> -c exactly, every pass
            return (np.full(img.shape, img.flat[0] * (-1.0) ** iters),)
        for _ in range(iters):
            img = reference_pass(img)
        return (img,)

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        got = np.asarray(outputs[0], dtype=np.float64)
        bad = int(np.sum(got != ref[0]))
        return combine(Check(bad == 0, f"exact: {bad} mismatches, checksum {got.sum():.8g}"))

    def flops(self, params: Params) -> float:
        return 49.0 * params.rows * params.cols

    def bytes(self, params: Params) -> float:
        return 8.0 * params.rows * params.cols


BENCHMARK = Conv2D()
