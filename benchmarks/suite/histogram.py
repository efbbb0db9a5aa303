"""Histogram as Accelerate writes it (issue 16): ``permute (+) zeros ix ones``.

``n`` float32 values uniform in [0, 1) fall into ``bins`` equal bins; the index function
reads the value and returns its bin. Integer ``+`` is exact and order-independent, so the
GPU skeleton uses native atomics in every determinism mode. Peers: ``numpy.bincount``,
``cupy.bincount``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.suite.collective_run import compute_node
from benchmarks.suite.common import Benchmark, Bound, Check, Compute, Outputs


@dataclass(frozen=True)
class Params:
    n: int
    bins: int
    iters: int = 1


def add(a: Any, b: Any) -> Any:
    return a + b


class Histogram(Benchmark):
    name = "histogram"
    form = "collective"
    kind = "1"
    sizes = {
        "tiny": Params(n=1000, bins=16),
        "quick": Params(n=2_000_000, bins=256),
        "paper": Params(n=1 << 26, bins=256),
    }
    notes = "permute (+) over int32 ones; bytes count the values only (ones are generated)"

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        r = rng or np.random.default_rng(21)
        x = r.random(params.n, dtype=np.float32)
        ones = np.ones(params.n, np.int32)
        return {"params": params, "x": x, "ones": ones, "zeros": np.zeros(params.bins, np.int32)}

    def bind(self, inputs: dict[str, Any]) -> Bound:
        from offload.acc.permute import permute

        x, ones, zeros = inputs["x"], inputs["ones"], inputs["zeros"]
        bins = inputs["params"].bins

        def bin_of(i: int) -> Any:
            return min(int(x[i] * bins), bins - 1)

        node = permute(add, zeros, bin_of, ones)

        def run(compute: Compute) -> Outputs:
            return (compute_node(compute, node),)

        return Bound(run=run)

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        bins = inputs["params"].bins
        b = np.minimum((np.asarray(inputs["x"]) * np.float32(bins)).astype(np.int64), bins - 1)
        return (np.bincount(b, minlength=bins),)

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        got = np.asarray(outputs[0]).astype(np.int64)
        bad = int(np.sum(got != ref[0]))
        return Check(bad == 0, f"{bad} wrong bins of {ref[0].size}; total {int(got.sum())}")

    def flops(self, params: Params) -> float:
        return 2.0 * params.n

    def bytes(self, params: Params) -> float:
        return 4.0 * params.n


BENCHMARK = Histogram()
