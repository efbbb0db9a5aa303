"""Accelerate smvm (SPEC §4): CSR sparse matrix times vector, in two forms.

* ``smvm`` (the default), as Accelerate writes it: the vector gathered through the column
  indices (``backpermute``), multiplied by the values (``zip_with``) and summed per row
  (``fold_seg`` over the row lengths). The gather and the product fuse into the segmented
  fold's loop: one kernel, no intermediate array.
* ``smvm-element``: one row per work item, an element function with a loop over the row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

import offload as ol
from benchmarks.suite import acc_python
from benchmarks.suite.common import (
    Benchmark,
    Bound,
    Check,
    Compute,
    Outputs,
    python_compute,
    rel_err_check,
)


@dataclass(frozen=True)
class Params:
    rows: int
    per_row: int
    band: int
    iters: int = 1


def add(a: Any, b: Any) -> Any:
    return a + b


def mul(a: Any, b: Any) -> Any:
    return a * b


class SMVM(Benchmark):
    name = "smvm"
    form = "collective"
    kind = "1"
    sizes = {
        "tiny": Params(rows=20, per_row=5, band=4),
        "quick": Params(rows=20_000, per_row=40, band=2000),
        "paper": Params(rows=36_417, per_row=119, band=5000),
    }
    notes = (
        "Accelerate form: fold_seg(add, 0, zip_with(mul, val, backpermute(x through col)), "
        "row lengths); synthetic protein-like matrix: columns drawn (with replacement) "
        "from a band"
    )

    def make_inputs(self, params: Params, rng: np.random.Generator | None = None) -> dict[str, Any]:
        rng = rng or np.random.default_rng(14)
        n, k = params.rows, params.per_row
        centre = np.arange(n)[:, None]
        cols = centre + rng.integers(-params.band, params.band + 1, (n, k))
        cols = np.sort(np.clip(cols, 0, n - 1), axis=1).astype(np.int32)
        vals = rng.uniform(-1.0, 1.0, (n, k)).astype(np.float32)
        x = rng.uniform(-1.0, 1.0, n).astype(np.float32)
        rowptr = (np.arange(n + 1) * k).astype(np.int32)
        return {
            "params": params,
            "rowptr": rowptr,
            "col": cols.ravel(),
            "val": vals.ravel(),
            "x": x,
        }

    def bind(self, inputs: dict[str, Any]) -> Bound:
        rowptr, col, val, x = inputs["rowptr"], inputs["col"], inputs["val"], inputs["x"]
        host_ptr = rowptr.get() if hasattr(rowptr, "get") else rowptr  # (CuPy inputs: acc_host)
        lengths = np.diff(np.asarray(host_ptr))  # the segment descriptor (host; small)
        gathered = ol.backpermute(tuple(col.shape), lambda k: col[k], x)
        node = ol.fold_seg(add, 0.0, ol.zip_with(mul, val, gathered), lengths)

        def run(compute: Compute) -> Outputs:
            if compute is python_compute:  # CPython: the segmented fold's meaning, in order
                return (acc_python.evaluate(node),)
            return (cast(Any, compute)(node),)  # compute_*(delayed)

        return Bound(run=run)

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        rowptr = np.asarray(inputs["rowptr"])
        col, val = np.asarray(inputs["col"]), np.asarray(inputs["val"], np.float64)
        x = np.asarray(inputs["x"], np.float64)
        rows = np.repeat(np.arange(len(rowptr) - 1), np.diff(rowptr))
        y = np.bincount(rows, val * x[col], minlength=len(rowptr) - 1)
        scale = np.bincount(rows, np.abs(val * x[col]), minlength=len(rowptr) - 1)
        return (y, scale)

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        return rel_err_check("|y-ref|<=1e-5(|A||x|)", np.asarray(outputs[0]), ref[0], ref[1], 1e-5)

    def nnz(self, params: Params) -> int:
        return params.rows * params.per_row

    def flops(self, params: Params) -> float:
        return 2.0 * self.nnz(params)

    def bytes(self, params: Params) -> float:
        return 8.0 * self.nnz(params) + 12.0 * params.rows


class SMVMElement(SMVM):
    name = "smvm-element"
    form = "element"
    notes = "one row per work item (element function with a loop over the row)"

    def bind(self, inputs: dict[str, Any]) -> Bound:
        rowptr, col, val, x = inputs["rowptr"], inputs["col"], inputs["val"], inputs["x"]
        rows = inputs["params"].rows

        def row_dot(i: int) -> Any:
            acc = np.float32(0.0)
            for k in range(rowptr[i], rowptr[i + 1]):
                acc += val[k] * x[col[k]]
            return acc

        return Bound(run=lambda compute: (compute((rows,), row_dot),))


BENCHMARK = SMVM()
ELEMENT = SMVMElement()
