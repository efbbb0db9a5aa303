"""Python's and NumPy's own functions as combine and element functions.

``functools.reduce(operator.add, xs)``, ``np.add.reduce``, ``jax.lax.reduce(x, 0, lax.add)``:
users pass the operator itself, not a lambda around it. Those are built-in functions with no
Python source for the frontend to read, so each known one is replaced, when a node is built,
by the plain function below that computes it (``operator.add`` by ``add``: ``a + b``), which
the frontend compiles like any other; an unknown built-in stays as it is and is reported
where it is compiled.

Each stands for exactly the call it replaces: ``max`` is Python's ``max(a, b)`` (the first
argument unless the second is greater: a NaN first stays), ``np.maximum`` NumPy's (a NaN
either side wins).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np


def add(a: Any, b: Any) -> Any:
    return a + b


def sub(a: Any, b: Any) -> Any:
    return a - b


def mul(a: Any, b: Any) -> Any:
    return a * b


def truediv(a: Any, b: Any) -> Any:
    return a / b


def floordiv(a: Any, b: Any) -> Any:
    return a // b


def mod(a: Any, b: Any) -> Any:
    return a % b


def and_(a: Any, b: Any) -> Any:
    return a & b


def or_(a: Any, b: Any) -> Any:
    return a | b


def xor(a: Any, b: Any) -> Any:
    return a ^ b


def max_(a: Any, b: Any) -> Any:
    return max(a, b)


def min_(a: Any, b: Any) -> Any:
    return min(a, b)


def maximum(a: Any, b: Any) -> Any:
    return np.maximum(a, b)


def minimum(a: Any, b: Any) -> Any:
    return np.minimum(a, b)


def fmax(a: Any, b: Any) -> Any:
    return np.fmax(a, b)


def fmin(a: Any, b: Any) -> Any:
    return np.fmin(a, b)


def neg(a: Any) -> Any:
    return -a


def abs_(a: Any) -> Any:
    return abs(a)


def sqrt(a: Any) -> Any:
    return np.sqrt(a)


def exp(a: Any) -> Any:
    return np.exp(a)


def log(a: Any) -> Any:
    return np.log(a)


def math_sqrt(a: Any) -> Any:
    return math.sqrt(a)


def math_exp(a: Any) -> Any:
    return math.exp(a)


EQUIVALENTS: dict[object, Callable[..., Any]] = {
    operator.add: add,
    np.add: add,
    operator.sub: sub,
    np.subtract: sub,
    operator.mul: mul,
    np.multiply: mul,
    operator.truediv: truediv,
    np.true_divide: truediv,
    operator.floordiv: floordiv,
    np.floor_divide: floordiv,
    operator.mod: mod,
    operator.and_: and_,
    np.bitwise_and: and_,
    operator.or_: or_,
    np.bitwise_or: or_,
    operator.xor: xor,
    np.bitwise_xor: xor,
    max: max_,
    min: min_,
    np.maximum: maximum,
    np.minimum: minimum,
    np.fmax: fmax,
    np.fmin: fmin,
    operator.neg: neg,
    np.negative: neg,
    abs: abs_,
    operator.abs: abs_,
    np.abs: abs_,
    np.sqrt: sqrt,
    np.exp: exp,
    np.log: log,
    math.sqrt: math_sqrt,
    math.exp: math_exp,
}
"""Built-in function -> the plain function that computes it."""


def plain(f: Any) -> Any:
    """``f``, or the plain function standing for it where it is a known built-in."""
    try:
        return EQUIVALENTS.get(f, f)
    except TypeError:  # unhashable: not one of them
        return f
