"""Allocation analysis: every allocating form is reported; tuples and docstrings are not."""
# ruff: noqa: F841, B018, E731, C408

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload.analysis.allocation import check_allocation
from offload.analysis.calls import resolve_calls
from tests.analysis.support import context, summary
from tests.analysis.test_valid_subset import every_construct

pytestmark = pytest.mark.unit

A = np.arange(8.0)


def _alloc(fn: Any) -> list[tuple[str, str]]:
    ctx = context(fn)
    return summary(check_allocation(ctx, resolve_calls(ctx)))


def test_tuples_docstrings_and_calls_that_do_not_allocate_are_fine() -> None:
    assert _alloc(every_construct) == []


def test_every_numpy_array_constructor_is_an_allocation() -> None:
    def f(i: int) -> Any:
        a = np.ones(len(A))  # a local array of constant size is allowed (not this one)
        b = np.full(A.shape[0], 1.0)
        c = np.arange(i)
        d = np.linspace(0.0, 1.0, 5)
        e = np.copy(A)
        return i

    assert _alloc(f) == [
        ("allocation", "np.ones(len(A))"),
        ("allocation", "np.full(A.shape[0], 1.0)"),
        ("allocation", "np.arange(i)"),
        ("allocation", "np.linspace(0.0, 1.0, 5)"),
        ("allocation", "np.copy(A)"),
    ]


def test_builtin_container_types_and_user_classes_are_constructions() -> None:
    class Pair:
        pass

    def f(i: int) -> Any:
        return dict(), tuple(A), str(i), complex(i, 1), Pair()

    diags = summary(check_allocation(context(f), resolve_calls(context(f))))
    assert diags == [
        ("allocation", "dict()"),
        ("allocation", "tuple(A)"),
        ("allocation", "str(i)"),
        ("allocation", "complex(i, 1)"),
        ("allocation", "Pair()"),
    ]


def test_numpy_scalar_types_are_conversions_not_constructions() -> None:
    def f(i: int) -> Any:
        return np.float32(i) + np.int64(i) + float(i) + int(A[i])

    assert _alloc(f) == []


def test_a_string_is_reported_once_and_a_nested_set_twice() -> None:
    def f(i: int) -> Any:
        s = "x"
        nested = {frozenset({i}), i}
        return i

    assert _alloc(f) == [
        ("allocation", '"x"'),
        ("allocation", "{frozenset({i}), i}"),
        ("allocation", "{i}"),
        ("allocation", "frozenset({i})"),
    ]


def test_local_arrays_of_constant_size_and_dtype_strings_are_not_allocations() -> None:
    def f(i: int) -> Any:
        a = np.zeros(3, dtype="float32")
        b = [0.0] * 4
        c = np.array([i, i + 1])
        return a[0] + b[1] + c[0]

    assert _alloc(f) == []


def test_comprehension_contents_do_not_cascade() -> None:
    def f(i: int) -> Any:
        return sum([[k] for k in range(i)])

    assert _alloc(f) == [("allocation", "[[k] for k in range(i)]")]
