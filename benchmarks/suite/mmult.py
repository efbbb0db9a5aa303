"""matrix-mult (SPEC §3.6): Repa's mmultP, a transpose then one dot product per element."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.suite.common import Benchmark, Bound, Check, Compute, Outputs, rel_err_check


@dataclass(frozen=True)
class Params:
    n: int
    iters: int = 1


class MatrixMult(Benchmark):
    name = "matrix-mult"
    kind = "1"
    bound_by = "compute"
    sizes = {"tiny": Params(n=6), "quick": Params(n=128), "paper": Params(n=2048)}

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        ra = rng or np.random.default_rng(6)
        rb = rng or np.random.default_rng(7)
        a = ra.uniform(-1.0, 1.0, (params.n, params.n)).astype(np.float32)
        b = rb.uniform(-1.0, 1.0, (params.n, params.n)).astype(np.float32)
        return {"params": params, "a": a, "b": b}

    def bind(self, inputs: dict[str, Any]) -> Bound:
        a, b = inputs["a"], inputs["b"]
        n = inputs["params"].n
        bt = b  # rebound to the transpose inside run

        def transpose(j: int, k: int) -> Any:  # Repa: backpermute (swap) B
            return b[k, j]

        def dot(i: int, j: int) -> Any:  # sumAllS (zipWith (*) row_i(A) row_j(Bt))
            acc = np.float32(0.0)
            for k in range(a.shape[1]):
                acc += a[i, k] * bt[j, k]
            return acc

        def run(compute: Compute) -> Outputs:
            nonlocal bt
            bt = compute((n, n), transpose)  # timed, as in Repa
            return (compute((n, n), dot),)

        return Bound(run=run)

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        return (np.asarray(inputs["a"], np.float64) @ np.asarray(inputs["b"], np.float64),)

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        # tight enough to reject a silent TF32 path (~5e-3)
        return rel_err_check("max|C-ref|<=2e-3", np.asarray(outputs[0]), ref[0], 1.0, 2e-3)

    def flops(self, params: Params) -> float:
        return 2.0 * params.n**3

    def bytes(self, params: Params) -> float:
        return 12.0 * params.n**2


BENCHMARK = MatrixMult()
