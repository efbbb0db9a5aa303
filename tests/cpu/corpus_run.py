"""Run a corpus program through a CPU backend and through the IR interpreter."""

from __future__ import annotations

from typing import Any

import numpy as np

from offload.cpu import CpuBackend
from offload.frontend.lower import fetch_captures, lower
from offload.ir.interp import compute
from offload.options import CompileOptions
from tests.corpus.valid import Program


def _ulps(got: np.ndarray[Any, Any], want: np.ndarray[Any, Any]) -> float:
    with np.errstate(all="ignore"):
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        ulp = np.spacing(np.abs(want)).astype(np.float64)
        return float(np.max(np.where(same, 0.0, diff / ulp), initial=0.0))


def check_program(program: Program, backend: CpuBackend) -> None:
    """The backend's arrays equal the interpreter's: exactly for ints and bools, within
    2 ulp for floats (libm functions differ between NumPy and the C library)."""
    lowered = lower(program.fn, len(program.shape))
    fn = lowered.ir
    captures = fetch_captures(program.fn, lowered)
    want = compute(fn, program.shape, captures)
    kernel = backend.compile(fn, CompileOptions())
    got = backend.allocate(program.shape, [t.dtype for t in fn.result_types])
    kernel.launch(program.shape, got, backend.prepare_captures(captures))
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w.dtype, f"{program.name}[{k}]"
        if w.dtype.kind == "f":
            assert _ulps(g, w) <= 2.0, f"{program.name}[{k}]: {g} != {w}"
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{program.name}[{k}]")
