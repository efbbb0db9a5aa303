"""2d-convolution through a linear index: the paper's §4.3 shape of benchmarks/suite/conv2d.py.

Repa offloads a kernel over the *linear* index of the result and stores every array as one
flat block, so a 2-D stencil reads ``src[toIndex(sh, clamp(fromIndex(sh, t) + d))]``: the
element function here is ``compute((H*W,), fn)`` with ``i, j = divmod(t, w)`` and reads the
flat source at ``yy * w + xx``. The centre tap is then ``(t // w) * w + t % w``, the round
trip that the ``divmod`` pass (index simplification) exists to remove.

Same inputs, reference, validation, FLOPs and bytes as conv2d.py (images are flattened).
Registered only by benchmarks/lab/ablation.py, not in the suite's ``ALL``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.suite.common import (
    Bound,
    Check,
    Compute,
    Outputs,
    as_tuple,
    pingpong,
    rel_err_check,
    to_host,
)
from benchmarks.suite.conv2d import Conv2D, Params, reference_pass


def make_step(k: Any, h: int, w: int) -> Any:
    """The element function over a flat ``h*w`` source captured by closure, and its setter."""
    src = np.zeros(1, dtype=np.float32)

    def convolve_linear(t: int) -> Any:
        i, j = divmod(t, w)
        acc = np.float32(0.0)
        for a in range(5):
            yy = min(max(i + a - 2, 0), h - 1)
            for b in range(5):
                xx = min(max(j + b - 2, 0), w - 1)
                acc += k[a, b] * src[yy * w + xx]
        return acc

    def set_src(a: Any) -> None:
        nonlocal src
        src = a

    return convolve_linear, set_src


class Conv2DLinear(Conv2D):
    name = "2d-convolution-linear"
    notes = "conv2d over a linear index (divmod) reading a flat source (paper §4.3)"

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        inputs = super().make_inputs(params, rng)
        return {**inputs, "img": inputs["img"].reshape(-1), "rnd": inputs["rnd"].reshape(-1)}

    def bind(self, inputs: dict[str, Any]) -> Bound:
        params: Params = inputs["params"]
        h, w = params.rows, params.cols
        convolve, set_src = make_step(inputs["k"], h, w)
        bufs: list[Any] = []

        def run(compute: Compute) -> Outputs:
            return (
                pingpong(compute, (h * w,), convolve, set_src, inputs["img"], params.iters, bufs),
            )

        def extra(compute: Compute) -> Check:
            set_src(inputs["rnd"])
            got = to_host(as_tuple(compute((h * w,), convolve))[0]).reshape(h, w)
            ref = reference_pass(np.asarray(inputs["rnd"]).reshape(h, w))
            return rel_err_check("random 1-pass", got, ref, 1.0, 1e-4)

        return Bound(run=run, extra=extra)

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        params: Params = inputs["params"]
        img = np.asarray(inputs["img"]).reshape(params.rows, params.cols)
        return tuple(r.reshape(-1) for r in super().reference({**inputs, "img": img}))

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        flat = tuple(np.asarray(o).reshape(-1) for o in outputs)
        return super().validate(flat, ref, inputs)


BENCHMARK = Conv2DLinear()
