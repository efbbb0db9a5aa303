"""Calls that cannot be resolved to an allowed function when the kernel is compiled."""
# ruff: noqa: F821, E731

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import numpy as np

from offload.diagnostics import SourceUnavailable, UnresolvedCall, UnsupportedSyntax
from tests.corpus.invalid._registry import expect

A = np.arange(16, dtype=np.float64)
T = (1.0, 2.0)
CFG = SimpleNamespace(scale=2.0, offset=lambda x: x + 1.0)


@expect(UnresolvedCall, line=23, col=5, caret="print(x)")
def print_call(i: int) -> Any:
    x = A[i]
    print(x)
    return x


@expect(UnresolvedCall, line=29, col=19, caret="random.random()")
def random_call(i: int) -> Any:
    return A[i] + random.random()


@expect(UnresolvedCall, line=34, col=19, caret="np.random.rand()")
def numpy_random_call(i: int) -> Any:
    return A[i] * np.random.rand()


@expect(UnresolvedCall, line=40, col=12, caret="x.conjugate()")
def method_of_local_value(i: int) -> Any:
    x = A[i] * 2.0
    return x.conjugate()


@expect(UnresolvedCall, line=45, col=19, caret="A.cumsum()")
def method_of_captured_array(i: int) -> Any:
    return A[i] / A.cumsum()


@expect(UnresolvedCall, line=50, col=12, caret="CFG.offset(A[i])")
def method_of_captured_object(i: int) -> Any:
    return CFG.offset(A[i])


@expect(UnresolvedCall, line=55, col=12, caret="undefined_helper(i)")
def name_bound_nowhere(i: int) -> Any:
    return undefined_helper(i)


@expect(UnresolvedCall, line=61, col=12, caret="f(A[i])")
def call_through_variable(i: int) -> Any:
    f = abs if i > 2 else float
    return f(A[i])


@expect(UnresolvedCall, line=66, col=12, caret="A(i)")
def calling_an_array(i: int) -> Any:
    return A(i)


@expect(UnresolvedCall, line=71, col=19, caret="np.median(A)")
def unsupported_numpy_reduction(i: int) -> Any:
    return A[i] / np.median(A)


_hidden_namespace: dict[str, Any] = {}
exec("def hidden_helper(x):\n    return x + 1\n", _hidden_namespace)
hidden_helper = _hidden_namespace["hidden_helper"]


@expect(SourceUnavailable, line=81, col=12, caret="hidden_helper(i)")
def helper_without_source(i: int) -> Any:
    return hidden_helper(i)


@expect(UnsupportedSyntax, line=86, col=12, caret="min(i, 1, 2, 3, 4, 5, 6, 7, 8)")
def min_of_nine_values(i: int) -> Any:
    return min(i, 1, 2, 3, 4, 5, 6, 7, 8) + i


@expect(UnresolvedCall, line=91, col=12, caret="T[0](i)")
def call_of_an_expression(i: int) -> Any:
    return T[0](i)


@expect(UnresolvedCall, line=96, col=9, caret="UNDEFINED_SCALE")
def undefined_name_read(i: int) -> Any:
    g = UNDEFINED_SCALE
    return i if g else 0
