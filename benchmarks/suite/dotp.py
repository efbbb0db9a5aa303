"""Accelerate dotp (SPEC §4): a reduction written as element functions in three stages.

``compute_*`` is a map, so the sum is staged:
1. ``compute((P1,), partial)``: work item ``p`` sums ``x[k]*y[k]`` for ``k = p, p+P1, ...``
   (interleaved rather than contiguous chunks, so that adjacent work items read adjacent
   elements: coalesced on the GPU, still streaming on the CPU);
2. ``compute((P2,), fold)`` sums the P1 partials the same way;
3. ``compute((1,), fold)`` sums the P2 values in one work item (a small final sum).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.suite.common import Benchmark, Bound, Check, Compute, Outputs


@dataclass(frozen=True)
class Params:
    n: int
    partials: int
    iters: int = 1


SECOND_STAGE = 256


class DotP(Benchmark):
    name = "dotp"
    kind = "1"
    sizes = {
        "tiny": Params(n=100, partials=8),
        "quick": Params(n=1_000_000, partials=4096),
        "paper": Params(n=20_000_000, partials=65536),
    }

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        rx = rng or np.random.default_rng(11)
        ry = rng or np.random.default_rng(12)
        x = rx.uniform(-1.0, 1.0, params.n).astype(np.float32)
        y = ry.uniform(-1.0, 1.0, params.n).astype(np.float32)
        return {"params": params, "x": x, "y": y}

    def bind(self, inputs: dict[str, Any]) -> Bound:
        x, y = inputs["x"], inputs["y"]
        p1 = inputs["params"].partials
        p2 = min(SECOND_STAGE, p1)
        partials = np.zeros(1, dtype=np.float32)  # rebound to each stage's result

        def partial_dot(p: int) -> Any:
            acc = np.float32(0.0)
            for k in range(p, len(x), p1):
                acc += x[k] * y[k]
            return acc

        def fold(p: int) -> Any:
            acc = np.float32(0.0)
            for k in range(p, len(partials), stride):
                acc += partials[k]
            return acc

        stride = p2

        def run(compute: Compute) -> Outputs:
            nonlocal partials, stride
            partials = compute((p1,), partial_dot)
            stride = p2
            partials = compute((p2,), fold)
            stride = 1
            return (compute((1,), fold),)

        return Bound(run=run)

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        x, y = np.asarray(inputs["x"], np.float64), np.asarray(inputs["y"], np.float64)
        return (np.array([x @ y]), np.array([np.abs(x * y).sum()]))

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        s = float(np.asarray(outputs[0]).reshape(-1)[0])
        err = abs(s - float(ref[0][0]))
        tol = 1e-5 * float(ref[1][0])
        return Check(
            err <= tol, f"s={s:.8g} ref={float(ref[0][0]):.8g} err {err:.3g} (tol {tol:.3g})"
        )

    def flops(self, params: Params) -> float:
        return 2.0 * params.n

    def bytes(self, params: Params) -> float:
        return 8.0 * params.n


BENCHMARK = DotP()
