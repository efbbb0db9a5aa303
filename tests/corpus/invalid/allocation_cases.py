"""Every form of allocation: containers, comprehensions, strings, closures, arrays, objects."""
# ruff: noqa: RET504, E731, C416, C400, C401, C402, C403, C404, C405, C408, UP018

from __future__ import annotations

from typing import Any

import numpy as np

from offload.diagnostics import AllocationNotAllowed
from tests.corpus.invalid._registry import expect

A = np.arange(16, dtype=np.float64)


class Point:
    def __init__(self, x: float, y: float) -> None:
        self.x = x
        self.y = y


@expect(AllocationNotAllowed, line=26, col=12, caret="[[x], y]")
def list_literal(i: int) -> Any:
    x = A[i]
    y = x * 2.0
    pair = [[x], y]  # a list of lists (a flat list display is a local array)
    return pair[0]


@expect(AllocationNotAllowed, line=32, col=13, caret="{0: 1.0, 1: 2.0}")
def dict_literal(i: int) -> Any:
    table = {0: 1.0, 1: 2.0}
    return table[i % 2]


@expect(AllocationNotAllowed, line=38, col=9, caret="{i, i + 1}")
def set_literal(i: int) -> Any:
    s = {i, i + 1}
    return len(s)


@expect(AllocationNotAllowed, line=44, col=10, caret="[A[k] for k in range(3)]")
def list_comprehension(i: int) -> Any:
    xs = [A[k] for k in range(3)]
    return xs[0] + i


@expect(AllocationNotAllowed, line=50, col=15, caret="{k: k * k for k in range(i)}")
def dict_comprehension(i: int) -> Any:
    squares = {k: k * k for k in range(i)}
    return squares[0]


@expect(AllocationNotAllowed, line=56, col=12, caret="{k % 3 for k in range(i)}")
def set_comprehension(i: int) -> Any:
    seen = {k % 3 for k in range(i)}
    return len(seen)


@expect(AllocationNotAllowed, line=62, col=14, caret="(A[k] for k in range(i))")
def generator_expression(i: int) -> Any:
    values = (A[k] for k in range(i))
    return values


@expect(AllocationNotAllowed, line=68, col=11, caret="np.zeros(len(A))")
def numpy_zeros(i: int) -> Any:
    buf = np.zeros(len(A))
    return buf[0] + i


@expect(AllocationNotAllowed, line=74, col=9, caret="np.array(A)")
def numpy_array(i: int) -> Any:
    v = np.array(A)
    return v[1]


@expect(AllocationNotAllowed, line=80, col=12, caret="np.empty_like(A)")
def numpy_empty_like(i: int) -> Any:
    return np.empty_like(A)[i]


@expect(AllocationNotAllowed, line=85, col=12, caret='"label"')
def string_literal(i: int) -> Any:
    name = "label"
    return i if name else -i


@expect(AllocationNotAllowed, line=91, col=15, caret='f"value {i}"')
def f_string(i: int) -> Any:
    message = f"value {i}"
    return i if message else 0


@expect(AllocationNotAllowed, line=97, col=11, caret='b"\\x00\\x01"')
def bytes_literal(i: int) -> Any:
    raw = b"\x00\x01"
    return i if raw else 0


@expect(AllocationNotAllowed, line=103, col=9, caret="Point(A[i], 0.0)")
def object_construction(i: int) -> Any:
    p = Point(A[i], 0.0)
    return p.x


@expect(AllocationNotAllowed, line=109, col=10, caret="list(range(i))")
def list_constructor(i: int) -> Any:
    ks = list(range(i))
    return ks[-1]


@expect(AllocationNotAllowed, line=115, col=11, caret="lambda x: x + 1.0")
def lambda_inside_kernel(i: int) -> Any:
    inc = lambda x: x + 1.0
    return inc(A[i])


@expect(AllocationNotAllowed, line=123, col=5, caret='"not a docstring"')
def bare_string_after_docstring(i: int) -> Any:
    """A docstring is fine: only the string below is reported."""
    x = A[i]
    "not a docstring"
    return x
