"""A NumPy scalar's ``.item()`` (the Python number) and ``.astype(t)`` of a scalar, a view, a
captured array or an array expression (as ``t(x)``): CPython's values and dtypes on every
target."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import offload as ol
from offload.lowering import check_and_lower
from tests.frontend.views_support import TARGETS, check

X = np.array([[-3.7, 0.5, 2.5, 1e10], [np.inf, -0.0, 7.25, -1.5]], dtype=np.float32)
K = np.array([[0, 1, 200, 255], [7, 128, 3, 9]], dtype=np.uint8)
B = X > 0
Y = np.array([[3.7, 0.5, 250.9, 1.0], [0.0, 99.5, 7.25, 128.0]], dtype=np.float32)
"""Values every integer type holds (a float out of the target's range casts as C does)."""


def item_is_a_python_number(i: int, j: int) -> Any:
    # float32 -> float, uint8 -> int, bool -> bool: each then combines as a Python number
    return X[i, j].item() * 3 + K[i, j].item() * 1000 + B[i, j].item()


def astype_of_scalars(i: int, j: int) -> Any:
    return K[i, j].astype(np.int8) * 2 + X[i, j].astype(np.float64) / 3


def astype_of_views(i: int, j: int) -> Any:
    return X[i].astype(np.float64).sum() + (K[i] * 2).astype(np.int16).sum() + j


def astype_of_a_whole_array(i: int, j: int) -> Any:
    return X.astype(np.float64)[i, j] + K.astype(np.int8)[1 - i].sum()


def astype_to_an_arrays_dtype(i: int, j: int) -> Any:
    return K[i, j].astype(X.dtype) + Y[i, j].astype(K.dtype)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "fn",
    [
        item_is_a_python_number,
        astype_of_scalars,
        astype_of_views,
        astype_of_a_whole_array,
        astype_to_an_arrays_dtype,
    ],
    ids=lambda f: f.__name__,
)
def test_conversion_methods_match_cpython(target: str, fn: Any) -> None:
    with np.errstate(all="ignore"):
        check(target, fn, X.shape)


def item_with_an_argument(i: int) -> Any:
    return X[i, 0].item(1)


def astype_with_a_keyword(i: int) -> Any:
    return X[i, 0].astype(np.float64, copy=False)


def astype_of_a_number(i: int) -> Any:
    return X[i, 0].astype(3)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (item_with_an_argument, r"'.item\(\)' takes 0 positional arguments"),
        (astype_with_a_keyword, r"'.astype\(\)' takes 1 positional argument"),
        (astype_of_a_number, r"'.astype\(\)' takes a NumPy scalar type or dtype"),
    ],
)
def test_a_conversion_method_misused_is_a_located_error(fn: Any, message: str) -> None:
    with pytest.raises(ol.OffloadError, match=message) as info:
        check_and_lower(fn, 1)
    assert "test_conversion_methods.py" in str(info.value) and "^" in str(info.value)
