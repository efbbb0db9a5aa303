"""Statements and expressions outside the subset (deny by default)."""
# ruff: noqa: RET504, F841, B018, PLW0120, E731, PLR1704, S101

from __future__ import annotations

from typing import Any

import numpy as np

from offload.diagnostics import UnsupportedSyntax
from tests.corpus.invalid._registry import expect

A = np.arange(16, dtype=np.float64)
T = (1.0, 2.0, 3.0)


@expect(UnsupportedSyntax, line=19, col=5, caret="try")
def try_except(i: int) -> Any:
    try:
        return 1.0 / i
    except ZeroDivisionError:
        return 0.0


@expect(UnsupportedSyntax, line=27, col=5, caret="with")
def with_statement(i: int) -> Any:
    with np.errstate(all="ignore"):
        x = A[i]
    return x


@expect(UnsupportedSyntax, line=35, col=9, caret='raise ValueError("negative")')
def raise_statement(i: int) -> Any:
    if A[i] < 0:
        raise ValueError("negative")
    return A[i]


@expect(UnsupportedSyntax, line=41, col=5, caret="yield i")
def yield_expression(i: int) -> Any:
    yield i


@expect(UnsupportedSyntax, line=48, col=5, caret="del x")
def del_statement(i: int) -> Any:
    x = A[i]
    y = x + 1
    del x
    return y


@expect(UnsupportedSyntax, line=54, col=5, caret="import math")
def import_inside(i: int) -> Any:
    import math

    return math.sqrt(i)


@expect(UnsupportedSyntax, line=61, col=5, caret="assert i >= 0")
def assert_statement(i: int) -> Any:
    assert i >= 0
    return i


@expect(UnsupportedSyntax, line=67, col=5, caret="class Local")
def class_inside(i: int) -> Any:
    class Local:
        pass

    return i


@expect(UnsupportedSyntax, line=75, col=5, caret="match")
def match_statement(i: int) -> Any:
    match i:
        case 0:
            return 1
        case _:
            return 2


@expect(UnsupportedSyntax, line=88, col=16, caret="None")
def for_else_returning_none(i: int) -> Any:
    for k in range(i):
        if A[k] > 1.0:
            break
    else:
        return None
    return i


@expect(UnsupportedSyntax, line=98, col=13, caret="None")
def while_else_assigning_none(i: int) -> Any:
    k = 0
    while k < i:
        k += 1
    else:
        k = None
    return k


@expect(UnsupportedSyntax, line=104, col=9, caret="y := A[i] * 2.0")
def walrus(i: int) -> Any:
    if (y := A[i] * 2.0) > 1.0:
        return y
    return 0.0


@expect(UnsupportedSyntax, line=111, col=16, caret="*T")
def star_args(i: int) -> Any:
    return max(*T) + i


def _scaled(x: float, factor: float) -> Any:
    return x * factor


OPTIONS = {"factor": 2.0}


@expect(UnsupportedSyntax, line=123, col=26, caret="**OPTIONS")
def double_star_kwargs(i: int) -> Any:
    return _scaled(A[i], **OPTIONS)


@expect(UnsupportedSyntax, line=128, col=26, caret="dtype=np.float32")
def keyword_to_intrinsic(i: int) -> Any:
    return np.sqrt(A[i], dtype=np.float32)


@expect(UnsupportedSyntax, line=133, col=14, caret="A[1:3] is A")
def slice_identity(i: int) -> Any:
    window = A[1:3] is A
    return window[0] + i


@expect(UnsupportedSyntax, line=140, col=14, caret="A is A")
def for_over_an_identity_test(i: int) -> Any:
    s = 0.0
    for x in A is A:
        s += x
    return s + i


@expect(UnsupportedSyntax, line=147, col=5, caret="def inner")
def nested_def(i: int) -> Any:
    def inner(x: float) -> float:
        return x * 2.0

    return i


@expect(UnsupportedSyntax, line=155, col=5, caret="x: float = A[i]")
def annotated_assignment(i: int) -> Any:
    x: float = A[i]
    return x


@expect(UnsupportedSyntax, line=161, col=12, caret="*rest")
def starred_assignment(i: int) -> Any:
    first, *rest = T
    return first + i


@expect(UnsupportedSyntax, line=167, col=17, caret="i in (1, 2, 3)")
def membership_test(i: int) -> Any:
    return 1 if i in (1, 2, 3) else 0


@expect(UnsupportedSyntax, line=172, col=12, caret="None")
def none_constant(i: int) -> Any:
    best = None
    return i if best else 0


@expect(UnsupportedSyntax, line=177, col=34, caret="extra")
def variadic_parameters(i: int, *extra: int) -> Any:
    return i
