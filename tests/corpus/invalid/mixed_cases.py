"""Locations that are easy to get wrong: non-ASCII columns, decorators, lambdas, nested
helpers, and several violations reported together."""
# ruff: noqa: E702, E731, PLC2401, RUF001, RUF003

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from offload.diagnostics import (
    AllocationNotAllowed,
    UnresolvedCall,
    UnsupportedSyntax,
    WriteNotAllowed,
)
from tests.corpus.invalid._registry import expect

A = np.arange(16, dtype=np.float64)


@expect(AllocationNotAllowed, line=25, col=26, caret="{ψ, i}")
def non_ascii_before_the_error(i: int) -> Any:
    ψ = A[i]; λ_вектор = {ψ, i}  # fmt: skip
    return λ_вектор[0]


@expect(UnresolvedCall, line=31, col=25, caret="print(größe)")
def non_ascii_inside_the_caret(i: int) -> Any:
    größe = A[i] * 2.0; print(größe)  # fmt: skip
    return größe


def _identity(fn: Any) -> Any:
    return fn


def _registered(tag: str) -> Callable[[Any], Any]:
    def wrap(fn: Any) -> Any:
        fn.tag = tag
        return fn

    return wrap


@expect(AllocationNotAllowed, line=53, col=12, caret="np.ones(A.size)")
@_registered(
    "multi-line decorator",
)
@_identity
def decorated_function(i: int) -> Any:
    return np.ones(A.size)[0] + i


def _inner_helper(x: float) -> Any:
    pair = {x, x * 2.0}
    return pair[1]


def _outer_helper(x: float) -> Any:
    return _inner_helper(x + 1.0) * 0.5


@expect(
    AllocationNotAllowed,
    line=57,
    col=12,
    caret="{x, x * 2.0}",
    notes=(
        (62, "in '_inner_helper' called from here"),
        (76, "in '_outer_helper' called from here"),
    ),
)
def violation_two_helpers_deep(i: int) -> Any:
    return _outer_helper(A[i])


@expect(AllocationNotAllowed, line=84, col=10, caret="{x}")
@expect(UnresolvedCall, line=85, col=5, caret="print(x)")
@expect(WriteNotAllowed, line=86, col=5, caret="A[i]")
def three_violations(i: int) -> Any:
    x = A[i]
    xs = {x}
    print(x)
    A[i] = xs[0]
    return x


lambda_element_function = expect(AllocationNotAllowed, line=91, col=15, caret="{i: 1}")(
    lambda i: {i: 1}[i]
)

lambda_ident = expect(UnsupportedSyntax, line=94, col=85, caret="A is A")(lambda i: A is A)


@expect(UnsupportedSyntax, line=100, col=5, caret="try")
@expect(AllocationNotAllowed, line=101, col=14, caret="{i}")
def violation_inside_a_rejected_block(i: int) -> Any:
    try:
        xs = {i}  # noqa: F841
    finally:
        pass
    return i
