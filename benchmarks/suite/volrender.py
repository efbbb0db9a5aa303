"""volume-rendering (SPEC §3.9): 1-D ray casting with early exit, (F) on the ray lengths."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.suite.common import Benchmark, Bound, Check, Compute, Outputs

MAX_LEN = 40


@dataclass(frozen=True)
class Params:
    n: int
    iters: int


class VolumeRendering(Benchmark):
    name = "volume-rendering"
    kind = "F"
    bound_by = "memory (launch-bound in practice)"
    sizes = {
        "tiny": Params(n=50, iters=3),
        "quick": Params(n=50_000, iters=10),
        "paper": Params(n=1_000_000, iters=1000),
    }
    notes = "one kernel per iteration: colour and the next L = (L + 1) % 40 as two results"

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        rng = rng or np.random.default_rng(201409)
        n = params.n
        ray0 = rng.integers(0, MAX_LEN, n).astype(np.int32)
        vis = (rng.random(n + MAX_LEN) < 0.7).astype(np.int32)
        u = rng.random(n + MAX_LEN, dtype=np.float32)
        opacity = np.where(rng.random(n + MAX_LEN) < 0.5, np.float32(0), u).astype(np.float32)
        return {"params": params, "ray0": ray0, "visible": vis, "opacity": opacity}

    def bind(self, inputs: dict[str, Any]) -> Bound:
        params: Params = inputs["params"]
        visible, opacity = inputs["visible"], inputs["opacity"]
        lengths = inputs["ray0"]

        def colour(i: int) -> Any:
            c = np.float32(0.0)
            alpha = np.float32(0.0)
            v = i
            while v < i + lengths[i]:  # front to back along the ray
                o = opacity[v]
                if visible[v] != 0 and o != 0:
                    c_next = c + (o + 1.0) * (1.0 - alpha)
                    alpha_next = alpha + o * (1.0 - alpha)
                    if alpha_next > 0:
                        return c_next  # early exit: the ray is opaque
                    c = c_next
                    alpha = alpha_next
                v += 1
            return c

        def colour_and_advance(i: int) -> tuple[Any, Any]:
            # one pass: this iteration's colour and the next iteration's ray length
            return colour(i), (lengths[i] + 1) % MAX_LEN

        def set_lengths(a: Any) -> None:
            nonlocal lengths
            lengths = a

        bufs: list[Any] = []  # two (colour, lengths) pairs, used in turn

        def run(compute: Compute) -> Outputs:
            shape = (params.n,)
            set_lengths(inputs["ray0"])
            res: Any = None
            for it in range(params.iters):
                # ping-pong: never write the lengths being read. The last pass's advance
                # is computed and not used (`advance (iters - 1)`: iters colour passes).
                slot = it % 2
                if len(bufs) > slot:
                    res = compute(shape, colour_and_advance, out=bufs[slot])
                else:
                    res = compute(shape, colour_and_advance)
                    bufs.append(res)
                set_lengths(res[1])
            return (res[0],)

        return Bound(run=run)

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        params: Params = inputs["params"]
        n = params.n
        lengths = (np.asarray(inputs["ray0"]) + params.iters - 1) % MAX_LEN
        vis, op = np.asarray(inputs["visible"]), np.asarray(inputs["opacity"])
        res = np.zeros(n, dtype=np.float32)
        done = np.zeros(n, dtype=bool)
        i = np.arange(n)
        for k in range(MAX_LEN):
            hit = ~done & (k < lengths) & (vis[i + k] != 0) & (op[i + k] != 0)
            res[hit] = op[i + k][hit] + np.float32(1.0)
            done |= hit
        return (res,)

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        got = np.asarray(outputs[0])
        bad = int(np.sum(got != ref[0]))
        return Check(bad == 0, f"exact: {bad} mismatches; sum {got.astype(np.float64).sum():.10g}")

    def flops(self, params: Params) -> float:
        return 5.0 * params.n

    def bytes(self, params: Params) -> float:
        return 20.0 * params.n


BENCHMARK = VolumeRendering()
