"""``np.finfo``/``np.iinfo`` in element functions: constants of NumPy's types for them
(``np.finfo(np.float32).eps`` a float32, ``np.iinfo(np.int16).max`` a Python int), from a
scalar type, a captured array's ``.dtype`` or a number; the same values and dtypes as
CPython on the interpreter and the CPU targets (the simulator: ``tests/sim``)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import offload as ol
from offload.frontend.lower import fetch_captures, lower
from offload.ir.interp import compute
from tests.frontend.test_scalar_library import _define

X = np.array([-3.0, -1e-39, 0.0, 1e-45, 2.5, 3e38, np.inf, np.nan], dtype=np.float32)
K = np.array([-32768, -7, 0, 1, 5, 300, 32767, 2], dtype=np.int16)
N = len(X)


def eps_of_a_type(i: int) -> Any:
    return X[i] + np.finfo(np.float32).eps


def limits_of_an_arrays_dtype(i: int) -> Any:
    big = np.finfo(X.dtype).max
    return min(max(X[i], -big), big) if X[i] > np.finfo(X.dtype).smallest_normal else X[i]


def integer_limits(i: int) -> Any:
    return np.iinfo(np.int16).max - K[i] // 2, np.iinfo(K.dtype).min // 2 + K[i] // 2


def info_of_a_value(i: int) -> Any:
    return np.finfo(X[i]).resolution + np.iinfo(K[i]).bits, np.finfo(float).tiny * 1e300


def every_float_attribute(i: int) -> Any:
    f = np.finfo(np.float64)
    return (
        f.eps + X[i], f.epsneg, f.max, f.min, f.tiny, f.smallest_normal, f.smallest_subnormal,
        f.resolution, f.bits, f.precision, f.maxexp, f.minexp, f.nmant, f.nexp,
    )  # fmt: skip


CASES = [eps_of_a_type, limits_of_an_arrays_dtype, integer_limits, info_of_a_value,
         every_float_attribute]  # fmt: skip


def reference(fn: Any) -> list[np.ndarray]:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        rows = [fn(i) for i in range(N)]
    rows = [r if isinstance(r, tuple) else (r,) for r in rows]
    return [np.array([row[k] for row in rows]) for k in range(len(rows[0]))]


def check(fn: Any, got: Any) -> None:
    outs = got if isinstance(got, tuple) else (got,)
    want = reference(fn)
    assert len(outs) == len(want)
    for g, w in zip(outs, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@pytest.mark.unit
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_type_limits_match_numpy_in_the_interpreter(fn: Any) -> None:
    lowered = lower(fn, 1)
    check(fn, tuple(compute(lowered.ir, (N,), fetch_captures(fn, lowered))))


@pytest.mark.cpu
@pytest.mark.parametrize("compute_x", [ol.compute_s, ol.compute_p], ids=["s", "p"])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_type_limits_match_numpy_on_the_cpu(fn: Any, compute_x: Any) -> None:
    check(fn, compute_x(N, fn))


@pytest.mark.unit
@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("np.finfo(np.int32).eps", r"np.finfo\(int32\): .*not inexact"),
        ("np.iinfo(np.float32).max", r"np.iinfo\(float32\)"),
        ("np.iinfo(np.int32).nope", r"'np.iinfo\(int32\)' has no attribute 'nope'"),
        ("np.finfo(np.float32).dtype", "must return numbers, not a Python object"),
        ("np.finfo(X[i:i + 2]).eps", r"np.finfo\(\) of a view"),
        ("np.iinfo(np.int32).max + K[i]", "does not fit int16"),
    ],
)
def test_a_limit_numpy_refuses_is_a_located_error(body: str, message: str) -> None:
    fn = _define(f"lambda i: {body}", {"X": X, "K": K})
    with pytest.raises(ol.OffloadError, match=message) as info:
        lower(fn, 1)
    assert "^" in str(info.value)
