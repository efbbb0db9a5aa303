"""Golden printed IR for representative element functions (the frontend's contract)."""
# ruff: noqa: E501  (golden IR lines are as long as the printer makes them)

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from offload.frontend.lower import lower
from offload.ir import print_function

pytestmark = pytest.mark.unit

A = np.zeros((4, 5), dtype=np.float32)
V = np.zeros(8)
SCALE = 2.5


def scale_f32(i: int, j: int) -> Any:
    return A[i, j] * 2.0


def negative_index(i: int) -> Any:
    return V[i - 1]


def if_else_merge(i: int) -> Any:
    if i > 3:
        x = i * 2
    else:
        x = 0.5
    return x


def for_sum(i: int) -> Any:
    s = 0
    for k in range(i):
        s += k
    return s


def floor_ops(i: int, j: int) -> Any:
    return (i - j) // 3, (i - j) % 3


def early_return(i: int) -> Any:
    if i == 0:
        return 1.0
    return math.sqrt(V[i]) * SCALE


def _sq(x: Any) -> Any:
    return x * x


def helper_twice(i: int) -> Any:
    return _sq(i) + _sq(A[0, i])


def round_and_where(i: int) -> Any:
    return round(V[i]), np.where(V[i] > 0, V[i], 0.0)


GOLDEN: list[tuple[str, Callable[..., Any], int, str]] = [
    (
        "a weak float literal takes the float32 type of the array element",
        scale_f32,
        2,
        """\
func @scale_f32(index %i.0: i64, index %j.1: i64, capture "A" %A.2: array<f32,2>) -> (f32) {
^entry.0:
  %3 = load %A.2, %i.0, %j.1 : f32
  %4 = const 2.0 : f32
  %5 = mul %3, %4 : f32
  return %5
}
""",
    ),
    (
        "an index that may be negative wraps with an explicit select",
        negative_index,
        1,
        """\
func @negative_index(index %i.0: i64, capture "V" %V.1: array<f64,1>) -> (f64) {
^entry.0:
  %2 = const 1 : i64
  %3 = sub %i.0, %2 : i64
  %4 = shape %V.1 {axis = 0} : i64
  %5 = const 0 : i64
  %6 = lt %3, %5 : bool
  %7 = add %3, %4 : i64
  %8 = select %6, %7, %3 : i64
  %9 = load %V.1, %8 : f64
  return %9
}
""",
    ),
    (
        "if/else joins int and float in a block argument of type f64",
        if_else_merge,
        1,
        """\
func @if_else_merge(index %i.0: i64) -> (f64) {
^entry.0:
  %1 = const 3 : i64
  %2 = gt %i.0, %1 : bool
  condbr %2, ^then.1, ^else.2
^then.1:
  %3 = const 2 : i64
  %x.4 = mul %i.0, %3 : i64
  %5 = cast %x.4 : f64
  br ^endif.3(%5)
^else.2:
  %6 = const 0.5 : f64
  br ^endif.3(%6)
^endif.3(%x.7: f64):
  return %x.7
}
""",
    ),
    (
        "a range loop carries its counter and accumulator as header arguments",
        for_sum,
        1,
        """\
func @for_sum(index %i.0: i64) -> (i64) {
^entry.0:
  %1 = const 0 : i64
  %2 = const 0 : i64
  %3 = const 1 : i64
  br ^loop.1(%2, %1)
^loop.1(%k.4: i64, %s.5: i64):
  %6 = lt %k.4, %i.0 : bool
  condbr %6, ^body.2, ^exit.3
^body.2:
  %7 = add %s.5, %k.4 : i64
  %8 = add %k.4, %3 : i64
  br ^loop.1(%8, %7)
^exit.3:
  return %s.5
}
""",
    ),
    (
        "floor division and modulo use the floor opcodes",
        floor_ops,
        2,
        """\
func @floor_ops(index %i.0: i64, index %j.1: i64) -> (i64, i64) {
^entry.0:
  %2 = sub %i.0, %j.1 : i64
  %3 = const 3 : i64
  %4 = floordiv %2, %3 : i64
  %5 = sub %i.0, %j.1 : i64
  %6 = const 3 : i64
  %7 = floormod %5, %6 : i64
  return %4, %7
}
""",
    ),
    (
        "two returns merge into one exit block; the captured scalar is a parameter",
        early_return,
        1,
        """\
func @early_return(index %i.0: i64, capture "V" %V.1: array<f64,1>, capture "SCALE" %SCALE.2: f64) -> (f64) {
^entry.0:
  %3 = const 0 : i64
  %4 = eq %i.0, %3 : bool
  condbr %4, ^then.1, ^else.2
^then.1:
  %5 = const 1.0 : f64
  br ^ret.3(%5)
^else.2:
  %6 = load %V.1, %i.0 : f64
  %7 = math %6 {fn = sqrt} : f64
  %8 = mul %7, %SCALE.2 : f64
  br ^ret.3(%8)
^ret.3(%9: f64):
  return %9
}
""",
    ),
    (
        "a helper is inlined per call site with the argument types",
        helper_twice,
        1,
        """\
func @helper_twice(index %i.0: i64, capture "A" %A.1: array<f32,2>) -> (f32) {
^entry.0:
  %2 = mul %i.0, %i.0 : i64
  %3 = const 0 : i64
  %4 = load %A.1, %3, %i.0 : f32
  %5 = mul %4, %4 : f32
  %6 = cast %2 : f32
  %7 = add %6, %5 : f32
  return %7
}
""",
    ),
    (
        "round is rint then cast; np.where evaluates both arms into a select",
        round_and_where,
        1,
        """\
func @round_and_where(index %i.0: i64, capture "V" %V.1: array<f64,1>) -> (i64, f64) {
^entry.0:
  %2 = load %V.1, %i.0 : f64
  %3 = math %2 {fn = rint} : f64
  %4 = cast %3 : i64
  %5 = load %V.1, %i.0 : f64
  %6 = const 0.0 : f64
  %7 = gt %5, %6 : bool
  %8 = load %V.1, %i.0 : f64
  %9 = const 0.0 : f64
  %10 = select %7, %8, %9 : f64
  return %4, %10
}
""",
    ),
]


@pytest.mark.parametrize(
    ("fn", "rank", "expected"), [c[1:] for c in GOLDEN], ids=[c[0] for c in GOLDEN]
)
def test_printed_ir_matches_golden(fn: Callable[..., Any], rank: int, expected: str) -> None:
    assert print_function(lower(fn, rank).ir) == expected
