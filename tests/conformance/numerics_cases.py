"""Issue 19's numerics reproducers, shared by the CPU and simulator tests: each case is
``(name, shape, fn, expected)`` where ``expected`` is what NumPy 2 gives."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

BIG = np.array([2**63 - 1, 2**63 - 1])
NEG_ZERO = np.array([-0.0, 0.0, np.nan, -2.0, 3.0])
NEG_ZERO32 = NEG_ZERO.astype(np.float32)
FLAGS = np.array([True, False])
ZERO_D = np.array(5.0)
SPECIAL = np.array(
    [np.nan, np.inf, -np.inf, 1e300, -1e300, -0.0, 300.5, -300.5, 3e9, -3e9, 1e19, 2.0**63, 2.0**64]
)
SPECIAL32 = np.array(
    [np.nan, np.inf, -np.inf, 3e38, -3e38, -0.0, 300.5, -300.5, 3e9, -3e9, 1e19, 2.0**63, 2.0**64],
    dtype=np.float32,
)
INT_TYPES: list[Any] = [
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
]


def _astype(a: np.ndarray[Any, Any], t: Any) -> np.ndarray[Any, Any]:
    with np.errstate(all="ignore"):
        return a.astype(t)


Case = tuple[str, Any, Callable[..., Any], np.ndarray[Any, Any]]

WRAP_CASES: list[Case] = [
    ("add_then_compare", 2, lambda i: (BIG[i] + 1) > BIG[i], np.array([False, False])),
    ("add_is_negative", 2, lambda i: (BIG[i] + 1) < 0, np.array([True, True])),
    ("mul_floordiv_roundtrip", 2, lambda i: (BIG[i] * 2) // 2 == BIG[i], np.array([False, False])),
    ("sub_then_abs", 2, lambda i: abs(-9223372036854775807 - i),
     np.array([2**63 - 1, -(2**63)], dtype=np.int64)),
    ("neg_of_min", 2, lambda i: -(-BIG[i] - 1) < 0, np.array([True, True])),
]  # fmt: skip

SIGN_CASES: list[Case] = [
    ("sign_f64", 5, lambda i: np.sign(NEG_ZERO[i]), np.sign(NEG_ZERO)),
    ("sign_f32", 5, lambda i: np.sign(NEG_ZERO32[i]), np.sign(NEG_ZERO32)),
]

MISC_CASES: list[Case] = [
    ("abs_of_bool", 2, lambda i: abs(FLAGS[i]), np.abs(FLAGS)),
    ("zero_d_capture", 3, lambda i: ZERO_D[()] + i, np.array([5.0, 6.0, 7.0])),
]


def _cast_case(t: Any, src: np.ndarray[Any, Any]) -> Case:
    return (f"{src.dtype}_to_{np.dtype(t).name}", len(src), lambda i: t(src[i]), _astype(src, t))


CAST_CASES: list[Case] = [_cast_case(t, s) for t in INT_TYPES for s in (SPECIAL, SPECIAL32)]

ALL_CASES = WRAP_CASES + SIGN_CASES + MISC_CASES + CAST_CASES


def assert_same(got: np.ndarray[Any, Any], expected: np.ndarray[Any, Any]) -> None:
    """Equal values (NaN equal to NaN, -0.0 told from +0.0) and the same dtype."""
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)
    if got.dtype.kind == "f":
        assert (np.signbit(got) == np.signbit(expected)).all(), (got, expected)
