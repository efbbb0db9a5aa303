"""The semantic suite shared by the sim and gpu lanes: backend results == IR interpreter.

``run_backend`` drives ``GPUBackend`` the way the driver does (compile, allocate,
prepare_captures, launch) and returns host arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from offload.ir.core import Function
from offload.ir.interp import compute
from offload.options import CompileOptions

FIXTURE_INPUTS: dict[str, tuple[tuple[int, ...], Any]] = {}


def fixture_case(name: str, rng: np.random.Generator) -> tuple[tuple[int, ...], list[Any]]:
    """Shape and captures for the hand-built IR fixture ``name`` (tiny shapes)."""
    if name == "square_or_negate":
        return (5, 37), [rng.random((5, 37), dtype=np.float32)]
    if name == "saxpy":
        return (70,), [
            rng.random(70, dtype=np.float32),
            rng.random(70, dtype=np.float32),
            np.float32(2.5),
        ]
    if name == "ratio":
        return (33,), [rng.random(33, dtype=np.float32), rng.random(33, dtype=np.float32) + 0.5]
    if name == "index_arith":
        return (3, 4, 5), []
    if name == "row_sum":
        return (6,), [rng.random((6, 4))]
    raise KeyError(name)


def to_host(x: Any) -> np.ndarray[Any, Any]:
    return np.asarray(x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else x)


def run_backend(
    backend: Any,
    fn: Function,
    shape: tuple[int, ...],
    captures: list[Any],
    options: CompileOptions | None = None,
) -> tuple[np.ndarray[Any, Any], ...]:
    kernel = backend.compile(fn, options or CompileOptions())
    outs = backend.allocate(shape, [t.dtype for t in fn.result_types])
    kernel.launch(shape, outs, backend.prepare_captures(captures))
    return tuple(to_host(o) for o in outs)


def assert_matches_interpreter(
    got: tuple[np.ndarray[Any, Any], ...], fn: Function, shape: tuple[int, ...], captures: list[Any]
) -> None:
    host_caps = [to_host(c) if hasattr(c, "__cuda_array_interface__") else c for c in captures]
    want = compute(fn, shape, host_caps)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "f":
            np.testing.assert_array_max_ulp(g, w, maxulp=2)
        else:
            np.testing.assert_array_equal(g, w)


def lowered_corpus_program(program: Any, options: CompileOptions) -> tuple[Function, list[Any]]:
    """The corpus program's optimised IR and its current captured values."""
    from offload.frontend.lower import fetch_captures, lower
    from offload.opt.manager import run_pipeline

    lowered = lower(program.fn, len(program.shape))
    fn = run_pipeline(lowered.ir, options)
    return fn, fetch_captures(program.fn, lowered)
