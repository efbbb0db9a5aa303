"""Arithmetic semantics on drawn captured scalars: the lowered IR (run by the interpreter)
agrees with CPython/NumPy -- floor division and modulo of negative operands, int64
wrap-around, and float32 staying float32."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.frontend.lower import lower
from offload.ir.interp import evaluate

pytestmark = pytest.mark.unit

P = 0
Q = 1
S = np.float32(0)
T = np.float32(0)
INT64 = st.integers(-(2**63), 2**63 - 1)
SMALL = st.integers(-1000, 1000)


def _wrap(v: int) -> int:
    return (v + 2**63) % 2**64 - 2**63


def floor_ops(i: int) -> Any:
    return P // Q, P % Q, divmod(P + i, Q)[1], -P // Q


def wrapping_ops(i: int) -> Any:
    return P + Q, P - Q, P * Q


def mixed_float_ops(i: int) -> Any:
    return S * 2.5 + 1, S / T, S * 2.5 + np.float64(1.0), S + i


FLOOR = lower(floor_ops, 1).ir
WRAP = lower(wrapping_ops, 1).ir
FLOATS = lower(mixed_float_ops, 1).ir


@settings(max_examples=60)
@given(SMALL, SMALL.filter(lambda q: q != 0))
def test_floor_division_and_modulo_follow_python_for_negative_operands(p: int, q: int) -> None:
    got = [int(v) for v in evaluate(FLOOR, (3,), [p, q])]
    assert got == [p // q, p % q, (p + 3) % q, -p // q]


@settings(max_examples=60)
@given(INT64, INT64)
def test_int64_arithmetic_wraps_like_numpy(p: int, q: int) -> None:
    got = [int(v) for v in evaluate(WRAP, (0,), [p, q])]
    assert got == [_wrap(p + q), _wrap(p - q), _wrap(p * q)]


FLOAT32 = st.floats(-1e6, 1e6, width=32, allow_nan=False)


@settings(max_examples=60)
@given(FLOAT32, FLOAT32.filter(lambda t: t != 0))
def test_float32_stays_float32_and_a_strong_float64_widens(s: float, t: float) -> None:
    fs, ft = np.float32(s), np.float32(t)
    got = evaluate(FLOATS, (2,), [fs, ft])
    with np.errstate(all="ignore"):
        want = (fs * 2.5 + 1, fs / ft, fs * 2.5 + np.float64(1.0), fs + 2)
    assert [g.dtype for g in got] == [np.float32, np.float32, np.float64, np.float32]
    for g, w in zip(got, want, strict=True):
        assert g == w


def test_capture_order_is_first_use() -> None:
    assert [c.name for c in FLOOR.captures] == ["P", "Q"]
    assert [c.name for c in FLOATS.captures] == ["S", "T"]
