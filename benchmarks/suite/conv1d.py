"""1d-convolution (SPEC §3.1): complex input times an 8192-tap real stencil, (R)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.suite.common import Benchmark, Bound, Check, Outputs, recompute


@dataclass(frozen=True)
class Params:
    n: int
    taps: int
    iters: int


def signal(n: int, taps: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The original's integer-valued input with edge replication (length n + taps)."""
    p = np.arange(n + taps, dtype=np.int64)
    q = np.clip(p, taps // 2 - 1, n + taps // 2 - 1)
    return ((2 * q) % 7).astype(np.float32), ((2 * q + 1) % 9).astype(np.float32)


class Conv1D(Benchmark):
    name = "1d-convolution"
    kind = "R"
    bound_by = "compute"
    sizes = {
        "tiny": Params(n=40, taps=8, iters=2),
        "quick": Params(n=20_000, taps=256, iters=2),
        "paper": Params(n=3_000_000, taps=8192, iters=10),
    }

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        re, im = signal(params.n, params.taps)
        w = np.full(params.taps, 2.0, dtype=np.float32)  # explicit array, not folded (SPEC)
        return {"params": params, "re": re, "im": im, "w": w}

    def bind(self, inputs: dict[str, Any]) -> Bound:
        re, im, w = inputs["re"], inputs["im"], inputs["w"]
        n = inputs["params"].n
        iters = inputs["params"].iters

        def correlate(t: int) -> tuple[Any, Any]:
            # window starts at t (correlation); complex input times the real weight w_k(1+i)
            acc_re = np.float32(0.0)
            acc_im = np.float32(0.0)
            for k in range(len(w)):
                r = re[t + k] * w[k]
                i = im[t + k] * w[k]
                acc_re += r - i
                acc_im += r + i
            return acc_re, acc_im

        return Bound(run=lambda compute: recompute(compute, (n,), correlate, iters))

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        re, im, w = inputs["re"], inputs["im"], inputs["w"]
        n, s = inputs["params"].n, inputs["params"].taps
        if np.all(w == w[0]):  # window sums via cumsum: exact in integers
            cr = np.concatenate([[0], np.cumsum(re.astype(np.int64))])
            ci = np.concatenate([[0], np.cumsum(im.astype(np.int64))])
            a = float(w[0]) * (cr[s : s + n] - cr[:n])
            b = float(w[0]) * (ci[s : s + n] - ci[:n])
        else:
            a = np.correlate(re.astype(np.float64), w.astype(np.float64), "valid")[:n]
            b = np.correlate(im.astype(np.float64), w.astype(np.float64), "valid")[:n]
        return (a - b, a + b)

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        # integer partial sums < 2^24: float32 is exact in any order, so bit-exact
        got_re, got_im = (np.asarray(o, dtype=np.float64) for o in outputs)
        bad = int(np.sum(got_re != ref[0]) + np.sum(got_im != ref[1]))
        checksum = float(np.sum(got_re) + np.sum(got_im))
        return Check(bad == 0, f"exact: {bad} mismatches; checksum {checksum:.6g}")

    def flops(self, params: Params) -> float:
        return 6.0 * params.n * params.taps

    def bytes(self, params: Params) -> float:
        return (params.n + params.taps) * 8.0 + params.n * 8.0


BENCHMARK = Conv1D()
