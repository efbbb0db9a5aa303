"""Accelerate dotp (SPEC §4) in two forms.

* ``dotp`` (the default), as Accelerate writes it: ``fold_all(add, 0, zip_with(mul, x, y))``.
  The product is fused into the reduction's loop (``x`` and ``y`` are read once, no
  intermediate array); a long vector is folded in stages whose tree is fixed by the size
  (``offload.acc.plan``: on the GPU ``2^16`` strided partials, then partials of 64, until a
  short sequential fold; on the CPU 256 contiguous partials, then one fold).
* ``dotp-element``, the same reduction written as element functions in stages, as the suite
  had it before the collectives existed:
  1. ``compute((P1,), partial)``: work item ``p`` sums ``x[k]*y[k]`` for ``k = p, p+P1, ...``
     (interleaved rather than contiguous chunks, so that adjacent work items read adjacent
     elements: coalesced on the GPU, still streaming on the CPU);
  2. ``compute((ceil(m / FAN_IN),), fold)`` sums ``m`` partials ``FAN_IN`` at a time, the
     same way, until one value is left. A small fan-in keeps each stage's serial loop
     short: a work item's loads are a chain of dependent memory latencies (run 8: two
     stages of 256 took 31 us of dotp's 122; stages of 16 take a few microseconds each).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

import offload as ol
from benchmarks.suite import acc_python
from benchmarks.suite.common import Benchmark, Bound, Check, Compute, Outputs, python_compute


@dataclass(frozen=True)
class Params:
    n: int
    partials: int
    iters: int = 1


FAN_IN = 16


def add(a: Any, b: Any) -> Any:
    return a + b


def mul(a: Any, b: Any) -> Any:
    return a * b


class DotP(Benchmark):
    name = "dotp"
    form = "collective"
    kind = "1"
    sizes = {
        "tiny": Params(n=100, partials=8),
        "quick": Params(n=1_000_000, partials=4096),
        "paper": Params(n=20_000_000, partials=65536),
    }
    notes = "Accelerate form: fold_all(add, 0, zip_with(mul, x, y))"

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        rx = rng or np.random.default_rng(11)
        ry = rng or np.random.default_rng(12)
        x = rx.uniform(-1.0, 1.0, params.n).astype(np.float32)
        y = ry.uniform(-1.0, 1.0, params.n).astype(np.float32)
        return {"params": params, "x": x, "y": y}

    def bind(self, inputs: dict[str, Any]) -> Bound:
        node = ol.fold_all(add, 0.0, ol.zip_with(mul, inputs["x"], inputs["y"]))

        def run(compute: Compute) -> Outputs:
            if compute is python_compute:  # CPython: the fold's meaning, in order
                return (acc_python.evaluate(node),)
            return (cast(Any, compute)(node),)  # compute_*(delayed)

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


class DotPElement(DotP):
    name = "dotp-element"
    form = "element"
    notes = "element functions in stages (interleaved partials, fan-in 16)"

    def bind(self, inputs: dict[str, Any]) -> Bound:
        x, y = inputs["x"], inputs["y"]
        p1 = inputs["params"].partials
        partials = np.zeros(1, dtype=np.float32)  # rebound to each stage's result
        stride = 1  # rebound to each fold stage's work-item count

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

        def run(compute: Compute) -> Outputs:
            nonlocal partials, stride
            partials = compute((p1,), partial_dot)
            while True:
                stride = -(-len(partials) // FAN_IN)
                partials = compute((stride,), fold)
                if stride == 1:
                    return (partials,)

        return Bound(run=run)


BENCHMARK = DotP()
ELEMENT = DotPElement()
