"""Prefix sum (issue 16): ``scanl1 (+)`` over ``n`` float32 values, deterministic (the
chunk tree depends on ``n`` only). Peers: ``numpy.cumsum``, ``cupy.cumsum``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.suite.collective_run import compute_node
from benchmarks.suite.common import Benchmark, Bound, Check, Compute, Outputs


@dataclass(frozen=True)
class Params:
    n: int
    iters: int = 1


def add(a: Any, b: Any) -> Any:
    return a + b


class PrefixSum(Benchmark):
    name = "prefix-sum"
    form = "collective"
    kind = "1"
    sizes = {
        "tiny": Params(n=1000),
        "quick": Params(n=4_000_000),
        "paper": Params(n=50_000_000),
    }

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        r = rng or np.random.default_rng(31)
        return {"params": params, "x": r.uniform(-1.0, 1.0, params.n).astype(np.float32)}

    def bind(self, inputs: dict[str, Any]) -> Bound:
        from offload.acc.scan import scanl1

        node = scanl1(add, inputs["x"])

        def run(compute: Compute) -> Outputs:
            return (compute_node(compute, node),)

        return Bound(run=run)

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        x = np.asarray(inputs["x"], np.float64)
        return (np.cumsum(x), np.cumsum(np.abs(x)))

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        got = np.asarray(outputs[0], np.float64)
        if got.shape != ref[0].shape:
            return Check(False, f"shape {got.shape}, want {ref[0].shape}")
        # float32 rounding grows with the partial sums' magnitude: relative to sum |x|
        bound = 1e-4 * ref[1] + 1e-6
        bad = int(np.sum(~(np.abs(got - ref[0]) <= bound)))
        return Check(bad == 0, f"{bad} of {got.size} outside 1e-4 of the running sum |x|")

    def flops(self, params: Params) -> float:
        return float(params.n)

    def bytes(self, params: Params) -> float:
        return 8.0 * params.n


BENCHMARK = PrefixSum()
