"""sum (issue 16's reduction figure): ``fold_all(add, 0, x)`` over a float32 vector.

The issue's targets: at 2^28 elements within 10% of CUB's ``DeviceReduce`` and at 85% of
DRAM bandwidth; at 2^16 within CUB + 3 µs. Peers: CUB through ``cupy.sum`` with CuPy's CUB
accelerator, CuPy's own reduction, JAX (``benchmarks/peers/gpu_libs.py``); NumPy on the CPU.
``cuda.compute`` (cuda-cccl) is not a peer here: the wheel the package index has (0.1.3.2)
needs CUDA 12 bindings, the GPU machine runs CUDA 13.

The default (deterministic) mode folds in a tree fixed by the length alone
(``offload.acc.plan``), so the bits do not depend on the run or the array's address.
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
    iters: int = 1


def add(a: Any, b: Any) -> Any:
    return a + b


class Sum(Benchmark):
    name = "sum"
    form = "collective"
    kind = "1"
    bound_by = "memory"
    sizes = {
        "tiny": Params(n=1000),
        "quick": Params(n=1 << 16),
        "paper": Params(n=1 << 28),
    }
    notes = "fold_all(add, 0, x), float32"

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        rng = rng or np.random.default_rng(16)
        x = rng.uniform(-1.0, 1.0, params.n).astype(np.float32)
        return {"params": params, "x": x}

    def bind(self, inputs: dict[str, Any]) -> Bound:
        node = ol.fold_all(add, 0.0, inputs["x"])

        def run(compute: Compute) -> Outputs:
            if compute is python_compute:
                return (acc_python.evaluate(node),)
            return (cast(Any, compute)(node),)

        return Bound(run=run)

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        x = np.asarray(inputs["x"], np.float64)
        return (np.array([x.sum()]), np.array([np.abs(x).sum()]))

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        s = float(np.asarray(outputs[0]).reshape(-1)[0])
        err = abs(s - float(ref[0][0]))
        tol = 1e-5 * float(ref[1][0])
        return Check(
            err <= tol, f"s={s:.8g} ref={float(ref[0][0]):.8g} err {err:.3g} (tol {tol:.3g})"
        )

    def flops(self, params: Params) -> float:
        return float(params.n)

    def bytes(self, params: Params) -> float:
        return 4.0 * params.n


BENCHMARK = Sum()
