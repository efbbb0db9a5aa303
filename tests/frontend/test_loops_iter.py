"""Loops as Python writes them (issue 17 item 4): ``for x in row``, over a captured
array, ``enumerate``, ``zip`` (stops at the shortest), ``reversed``, ``for/while ... else`` —
each lowered to a counted loop, compared with CPython on every target."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload.diagnostics import TypeMismatch, UnsupportedSyntax
from offload.lowering import check_and_lower
from tests.frontend.views_support import TARGETS, check

A = np.arange(30.0).reshape(5, 6) * 0.75 - 7.5
X = np.arange(7, dtype=np.int16) * 3 - 4
F32 = (np.arange(9, dtype=np.float32) - 2.5) / np.float32(3.0)


def over_a_row(i: int, j: int) -> Any:
    s = 0.0
    for x in A[i]:
        s += x
    return s


def over_a_captured_array(i: int, j: int) -> Any:
    s = 0
    for x in X:
        s += x * (i - j)
    return s


def over_float32_keeps_float32(i: int, j: int) -> Any:
    s = np.float32(0.0)
    for x in F32[i:]:
        s = s * np.float32(0.5) + x
    return s


def enumerate_with_start(i: int, j: int) -> Any:
    s = 0.0
    for k, v in enumerate(A[:, j], i):
        s += k * v
    for k, v in enumerate(A[i], start=-j):
        s -= k * v
    return s


def zip_stops_at_the_shortest(i: int, j: int) -> Any:
    s = 0.0
    n = 0
    for p, q in zip(A[i], A[j % 5, ::-2]):
        s += p * q
        n += 1
    return s + n * 1000.0


def zip_of_enumerate_nested_targets(i: int, j: int) -> Any:
    s = 0.0
    for (k, p), q in zip(enumerate(A[i, j:]), X):
        s += k * p - q
    return s


def reversed_range_and_view(i: int, j: int) -> Any:
    s = 0.0
    for k in reversed(range(i, 9, 2)):
        s = s * 0.5 + k
    for x in reversed(A[i, j:]):
        s = s * 0.25 + x
    return s


def negative_step_range_as_a_sequence(i: int, j: int) -> Any:
    s = 0
    for k, v in enumerate(range(j, i - 3, -(i % 2) - 1)):
        s = s * 3 + k * v
    return s


def for_else_runs_without_break(i: int, j: int) -> Any:
    s = 0.0
    for x in A[i]:
        if x > j:
            s += x
            break
    else:
        s = -1.0
    return s


def while_else(i: int, j: int) -> Any:
    k = 0
    while k < i:
        if k == j:
            break
        k += 1
    else:
        k = 100
    return k


def loop_variable_keeps_its_last_value(i: int, j: int) -> Any:
    x = -1.0
    for x in A[i, :j]:
        pass
    return x


def rows_of_a_matrix(i: int, j: int) -> Any:
    s = 0.0
    for r in A[i:]:
        for x in r[::2]:
            s += x
    return s


WEIGHTS = (0.25, 0.5, 0.25)


def over_tuples(i: int, j: int) -> Any:
    s = 0.0
    for k, w in enumerate(WEIGHTS):
        s += w * A[i, j - k]
    for x in (1, 2, i):
        s += x
    for _ in ():
        s = -1.0
    return s


CASES = [
    over_tuples,
    over_a_row,
    over_a_captured_array,
    over_float32_keeps_float32,
    enumerate_with_start,
    zip_stops_at_the_shortest,
    zip_of_enumerate_nested_targets,
    reversed_range_and_view,
    negative_step_range_as_a_sequence,
    for_else_runs_without_break,
    while_else,
    loop_variable_keeps_its_last_value,
    rows_of_a_matrix,
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_loop_matches_cpython(target: str, fn: Any) -> None:
    check(target, fn, (5, 6))


def iterates_a_number(i: int) -> Any:
    s = 0
    for x in i:
        s += x
    return s


def zip_outside_a_loop(i: int) -> Any:
    z = zip(A[i], A[i])  # noqa: F841
    return 0


def reversed_enumerate(i: int) -> Any:
    s = 0.0
    for k, x in reversed(enumerate(A[i])):  # type: ignore[call-overload]
        s += k * x
    return s


def wrong_unpack(i: int) -> Any:
    s = 0.0
    for a, b, c in zip(A[i], A[i]):
        s += a
    return s


@pytest.mark.unit
@pytest.mark.parametrize(
    ("fn", "cls", "message"),
    [
        (iterates_a_number, TypeMismatch, "cannot iterate over a Python int"),
        (zip_outside_a_loop, UnsupportedSyntax, "zip\\(\\) outside a for loop header"),
        (wrong_unpack, TypeMismatch, "cannot unpack a tuple of 2 into 3 names"),
        (reversed_enumerate, TypeMismatch, "Python cannot reverse it"),
    ],
)
def test_loop_misuse_is_a_located_error(fn: Any, cls: type, message: str) -> None:
    with pytest.raises(cls, match=message) as err:
        check_and_lower(fn, 1)
    assert "test_loops_iter.py" in str(err.value) and "^" in str(err.value)
