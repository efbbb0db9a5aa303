"""treesearch (SPEC §3.8): branch-free search of a complete BST in BFS layout, (R)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.suite.common import Benchmark, Bound, Check, Outputs, recompute


@dataclass(frozen=True)
class Params:
    depth: int
    queries: int
    iters: int


def flat_tree(depth: int) -> np.ndarray[Any, Any]:
    """Keys 0..2^d-2 in BFS (Eytzinger) order: level L, position p holds (2p+1)2^(d-1-L)-1."""
    parts = [
        (2 * np.arange(2**level, dtype=np.int64) + 1) * 2 ** (depth - 1 - level) - 1
        for level in range(depth)
    ]
    return np.concatenate(parts).astype(np.int32)


class TreeSearch(Benchmark):
    name = "treesearch"
    kind = "R"
    bound_by = "memory (gather latency)"
    sizes = {
        "tiny": Params(depth=5, queries=40, iters=2),
        "quick": Params(depth=16, queries=200_000, iters=3),
        "paper": Params(depth=16, queries=20_000_000, iters=50),
    }

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        rng = rng or np.random.default_rng(10)
        q = rng.integers(0, 2**params.depth - 1, params.queries).astype(np.int32)
        return {"params": params, "tree": flat_tree(params.depth), "q": q}

    def bind(self, inputs: dict[str, Any]) -> Bound:
        tree, q = inputs["tree"], inputs["q"]
        params: Params = inputs["params"]
        depth = params.depth
        leaves = 2**depth - 1

        def search(n: int) -> Any:
            key = q[n]
            o = 0
            for _ in range(depth):  # fixed, branch-free steps
                o = 2 * o + 1 + (1 if key > tree[o] else 0)
            return o - leaves  # the exit index; found = (index == key)

        def run(compute: Any) -> Outputs:
            return recompute(compute, (params.queries,), search, params.iters, dtype=np.int32)

        return Bound(run=run)

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        tree, q = np.asarray(inputs["tree"]), np.asarray(inputs["q"])
        o = np.zeros(len(q), dtype=np.int64)
        for _ in range(inputs["params"].depth):
            o = 2 * o + 1 + (q > tree[o])
        return (o - (2 ** inputs["params"].depth - 1),)

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        got = np.asarray(outputs[0])
        q = np.asarray(inputs["q"])
        bad = int(np.sum(got != q))
        ref_bad = int(np.sum(ref[0] != q))
        return Check(
            bad == 0 and ref_bad == 0,
            f"exit index == key: {bad} mismatches; found {int(np.sum(got == q))}",
        )

    def flops(self, params: Params) -> float:
        return 0.0

    def bytes(self, params: Params) -> float:
        return 8.0 * params.queries + 4.0 * float(2**params.depth - 1)


BENCHMARK = TreeSearch()
