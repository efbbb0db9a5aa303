"""Shared by the view, loop, reduction and captured-tuple tests: run an element function on
a target and compare with CPython running it at every index."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import offload as ol
from offload.frontend.lower import fetch_captures
from offload.ir.interp import compute
from offload.lowering import check_and_lower

TARGETS = [
    pytest.param("interp", marks=pytest.mark.unit),
    pytest.param("s", marks=pytest.mark.cpu),
    pytest.param("p", marks=pytest.mark.cpu),
    pytest.param("g", marks=pytest.mark.sim),
]
"""The IR interpreter (the specification), compute_s, compute_p and compute_g (the sim
lane runs it under numba's CUDA simulator)."""


def run(target: str, fn: Callable[..., Any], shape: tuple[int, ...]) -> Any:
    """The result array (a tuple of arrays for a tuple-valued function)."""
    if target == "interp":
        lowered = check_and_lower(fn, len(shape))
        outs = compute(lowered.ir, shape, fetch_captures(fn, lowered))
        return outs[0] if len(outs) == 1 else tuple(outs)
    compute_fn = {"s": ol.compute_s, "p": ol.compute_p, "g": ol.compute_g}[target]
    result = compute_fn(shape, fn)
    return tuple(map(np.asarray, result)) if isinstance(result, tuple) else np.asarray(result)


def reference(fn: Callable[..., Any], shape: tuple[int, ...]) -> np.ndarray:
    """CPython (and NumPy) running ``fn`` at every index."""
    with np.errstate(all="ignore"):
        values = [fn(*ix) for ix in itertools.product(*(range(n) for n in shape))]
    return np.array(values).reshape(shape)


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    """Same dtype, same bits (NaNs equal)."""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind == "f":
        assert (np.signbit(got) == np.signbit(want)).all()


def check(target: str, fn: Callable[..., Any], shape: tuple[int, ...]) -> None:
    assert_same(run(target, fn, shape), reference(fn, shape))
