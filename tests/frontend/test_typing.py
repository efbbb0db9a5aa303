"""NEP 50 typing of element functions: weak Python scalars adapt, strong NumPy ones win."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from offload.frontend.lower import lower

pytestmark = pytest.mark.unit

F32 = np.ones(4, dtype=np.float32)
I32 = np.ones(4, dtype=np.int32)
I8 = np.ones(4, dtype=np.int8)
U8 = np.ones(4, dtype=np.uint8)
B = np.ones(4, dtype=bool)
S_F32 = np.float32(2.0)


def _dtypes(fn: Callable[..., Any]) -> list[str]:
    return [str(t.dtype) for t in lower(fn, 1).ir.result_types]


CASES: list[tuple[str, Callable[..., Any], list[str]]] = [
    ("f32 array * 2.0 stays f32", lambda i: F32[i] * 2.0, ["float32"]),
    ("i32 + 1 stays i32", lambda i: I32[i] + 1, ["int32"]),
    ("i32 + 1.0 is f64", lambda i: I32[i] + 1.0, ["float64"]),
    ("i32 / i32 is f64", lambda i: I32[i] / I32[i], ["float64"]),
    ("f32 / 3 stays f32", lambda i: F32[i] / 3, ["float32"]),
    ("math.sqrt of f32 is f64", lambda i: math.sqrt(F32[i]), ["float64"]),
    ("np.sqrt of f32 is f32", lambda i: np.sqrt(F32[i]), ["float32"]),
    ("np.sqrt of a Python float is f64", lambda i: np.sqrt(i * 1.0), ["float64"]),
    ("bool + bool is int", lambda i: (i > 1) + (i > 2), ["int64"]),
    ("np bool + np bool is bool", lambda i: B[i] + B[i], ["bool"]),
    ("i8 + u8 is i16", lambda i: I8[i] + U8[i], ["int16"]),
    ("i8 + weak int stays i8", lambda i: I8[i] + 3, ["int8"]),
    ("index arithmetic is int64", lambda i: i * 3 + 1, ["int64"]),
    ("int / int is f64", lambda i: i / 2, ["float64"]),
    ("np.float32 cast is strong", lambda i: np.float32(i) * 0.5, ["float32"]),
    ("f32 scalar * f32 array", lambda i: S_F32 * F32[i], ["float32"]),
    ("f32 + f64 array is f64", lambda i: F32[i] + np.float64(1.0), ["float64"]),
    ("comparison is bool", lambda i: F32[i] > 0.5, ["bool"]),
    ("round of float is int", lambda i: round(F32[i]), ["int64"]),
    ("float() of f32 is f64", lambda i: float(F32[i]), ["float64"]),
    ("abs of i32 stays i32", lambda i: abs(I32[i]), ["int32"]),
    ("tuple result is flattened", lambda i: (I32[i], F32[i], i > 0), ["int32", "float32", "bool"]),
    ("min of int and float is float", lambda i: min(i, 0.5), ["float64"]),
    ("np.where keeps f32", lambda i: np.where(i > 0, F32[i], 0.0), ["float32"]),
    ("conditional expression joins int and float", lambda i: 1 if i else 2.5, ["float64"]),
    ("and/or join operand types", lambda i: i > 2 and 0.5, ["float64"]),
]


@pytest.mark.parametrize(("fn", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_result_dtype_follows_nep50(fn: Callable[..., Any], expected: list[str]) -> None:
    assert _dtypes(fn) == expected


def _returns_int_or_f32(i: int) -> Any:
    if i > 2:
        return 1
    return F32[i]


def _returns_int_or_float(i: int) -> Any:
    if i > 2:
        return 1
    return 0.5


def test_return_types_unify_with_a_weak_int_adapting_to_f32() -> None:
    assert _dtypes(_returns_int_or_f32) == ["float32"]


def test_return_types_unify_weak_int_and_float_to_f64() -> None:
    assert _dtypes(_returns_int_or_float) == ["float64"]


def _loop_widens(i: int) -> Any:
    x = 0
    for _ in range(i):
        x = x + 0.5
    return x


def _loop_f32_accumulator(i: int) -> Any:
    acc = np.float32(0)
    for k in range(i):
        acc += F32[k] * 2.0
    return acc


def test_loop_variable_is_promoted_over_all_assignments() -> None:
    ir = lower(_loop_widens, 1).ir
    assert [str(t.dtype) for t in ir.result_types] == ["float64"]
    header = next(b for b in ir.blocks if b.hint == "loop")
    assert [str(a.type) for a in header.args] == ["i64", "f64"]


def test_float32_accumulator_stays_float32_through_a_loop() -> None:
    assert _dtypes(_loop_f32_accumulator) == ["float32"]
