"""NEP 50 typing decided by NumPy and CPython themselves.

Rather than hand-written promotion tables, the result type of an operation is found by
performing it once on sample values of the operand types: a weak operand is a Python
``True``/``1``/``1.0``, a strong one a NumPy scalar of its dtype. Whatever CPython + NumPy
return (a Python scalar: weak; a NumPy scalar: strong, of that dtype) is the type the element
function has at run time, so the compiled program types exactly like the interpreted one.
Results are memoised: the set of type combinations is small.
"""

from __future__ import annotations

import functools
import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from offload.ir.types import BOOL, F64, I64, ScalarType, scalar_of_dtype

TypeKey = tuple[ScalarType, bool]
"""A scalar's (IR type, weak) pair."""

BINARY_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "pow": operator.pow,
    "lshift": operator.lshift,
    "rshift": operator.rshift,
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
}
UNARY_OPERATORS: dict[str, Callable[[Any], Any]] = {
    "neg": operator.neg,
    "pos": operator.pos,
    "invert": operator.invert,
    "abs": abs,
}


def sample(t: ScalarType, weak: bool) -> Any:
    """A value of type ``t`` as the running program would hold it (value 1 avoids
    division-by-zero and domain errors)."""
    if weak:
        if t.is_bool:
            return True
        return 1 if t.is_int else 1.0
    return t.dtype.type(1)


def _weak_sample_value(t: ScalarType) -> Any:
    return False if t.is_bool else 0 if t.is_int else 0.0


def type_of_result(result: Any) -> TypeKey | None:
    """The (type, weak) of a value CPython/NumPy computed; ``None`` if unsupported."""
    if type(result) is bool:
        return BOOL, True
    if type(result) is int:
        return I64, True
    if type(result) is float:
        return F64, True
    if isinstance(result, np.generic | np.ndarray):
        st = scalar_of_dtype(result.dtype)
        return None if st is None else (st, False)
    return None


def _run(fn: Callable[..., Any], *args: Any) -> TypeKey | None:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            result = fn(*args)
        except (TypeError, ValueError, OverflowError, ZeroDivisionError):
            return None
    return type_of_result(result)


@functools.cache
def binary_result(op: str, a: TypeKey, b: TypeKey) -> TypeKey | None:
    """Type of ``a <op> b`` (``op`` a key of ``BINARY_OPERATORS``), or ``None`` if Python /
    NumPy reject the operand types."""
    return _run(BINARY_OPERATORS[op], sample(*a), sample(*b))


@functools.cache
def unary_result(op: str, a: TypeKey) -> TypeKey | None:
    """Type of ``-a``, ``+a``, ``~a`` or ``abs(a)``."""
    return _run(UNARY_OPERATORS[op], sample(*a))


@functools.cache
def call_result(fn: Callable[..., Any], *args: TypeKey) -> TypeKey | None:
    """Type of ``fn(*args)`` for a NumPy ufunc or scalar type."""
    return _run(fn, *(sample(*a) for a in args))


@functools.cache
def join(*keys: TypeKey) -> TypeKey | None:
    """The type that holds every one of ``keys``: where control flow merges (if/else,
    returns, loop variables), ``min``/``max`` and conditional expressions.

    Weak values join by Python's number tower (bool < int < float) and stay weak; with a
    strong value NumPy's ``result_type`` decides (weak scalars adapt to it)."""
    if all(weak for _, weak in keys):
        if any(t.is_float for t, _ in keys):
            return F64, True
        if any(t.is_int for t, _ in keys):
            return I64, True
        return BOOL, True
    parts = [_weak_sample_value(t) if weak else t.dtype for t, weak in keys]
    try:
        dt = np.result_type(*parts)
    except TypeError:
        return None
    st = scalar_of_dtype(dt)
    return None if st is None else (st, False)


def describe_key(key: TypeKey) -> str:
    """``int``/``float``/``bool`` for weak types, the dtype name for strong ones."""
    t, weak = key
    if weak:
        return "bool" if t.is_bool else "int" if t.is_int else "float"
    return str(t.dtype)
