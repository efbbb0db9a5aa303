"""The exact scalar semantics of every opcode: the one source of truth.

The interpreter (``interp.py``) and the optimiser's constant folding both call
``eval_op``; every backend is tested against it. The rules (see ``ops.py`` and
docs/ARCHITECTURE.md, "Semantics decisions"):

* Integers wrap (two's complement in the value's width). Integer ops are computed on exact
  Python ints and reduced modulo ``2**bits``, so no NumPy overflow warning can leak.
* ``FLOORDIV``/``FLOORMOD``/``DIV``/``REM`` by an integer zero give 0 (NumPy); ``INT_MIN // -1``
  wraps to ``INT_MIN``.
* Floats stay in their own width: NumPy ufuncs on NumPy scalars of the operand's dtype.
* ``MIN(a, b)`` is ``b if b < a else a`` and ``MAX(a, b)`` is ``b if b > a else a`` (Python).
* Integer ``POW`` is exact modulo ``2**bits``; a negative exponent gives 1 for base 1,
  ``±1`` for base -1 and 0 otherwise.
* Shifts by a count outside ``[0, bits)`` give NumPy's result: 0, or -1 for ``SHR`` of a
  negative signed value.
* ``CAST`` is NumPy ``astype``; a float -> int cast of a value the integer type cannot hold
  (NaN, ±inf, out of range) follows NumPy's array ``astype`` on x86-64 (``float_to_int``), on
  every host and target.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from offload.ir.ops import COMPARE, MATH_FUNCTIONS, Opcode
from offload.ir.types import ScalarType

Scalar = np.generic
_IntFn = Callable[[int, int, int, bool], int]
"""An integer binary op on exact ints: ``(a, b, bits, signed) -> unwrapped result``."""


def wrap_int(value: int, bits: int, signed: bool) -> int:
    """``value`` reduced to a ``bits``-wide two's complement (or unsigned) integer."""
    value &= (1 << bits) - 1
    if signed and value >> (bits - 1):
        value -= 1 << bits
    return value


# -- integer ops on exact Python ints ---------------------------------------------------


def _cvtt(x: float, bits: int) -> int:
    """x86-64's truncating conversion to a signed ``bits``-wide int: ``INT_MIN`` when ``x``
    is NaN or outside the type."""
    lim = 1 << (bits - 1)
    if not -lim <= x < lim:  # NaN fails every comparison
        return -lim
    return math.trunc(x)


def float_to_int(x: float, bits: int, signed: bool) -> int:
    """``np.array([x]).astype(int type)`` as NumPy 2 computes it on x86-64 (the C cast the
    array loop compiles to): widths below 32 convert through int32 and wrap; unsigned 32/64
    convert ``x - 2**(b-1)`` when ``x >= 2**(b-1)`` and add it back, wrapping; all else is
    ``_cvtt``. Exact on every host (the C cast itself is undefined out of range)."""
    if bits < 32:
        return wrap_int(_cvtt(x, 32), bits, signed)
    if signed:
        return _cvtt(x, bits)
    half = 1 << (bits - 1)
    if x >= half:
        return wrap_int(_cvtt(x - half, bits) + half, bits, False)
    return wrap_int(_cvtt(x, bits), bits, False)


def _floordiv(a: int, b: int, bits: int, signed: bool) -> int:
    return 0 if b == 0 else a // b


def _floormod(a: int, b: int, bits: int, signed: bool) -> int:
    return 0 if b == 0 else a % b


def _truncdiv(a: int, b: int, bits: int, signed: bool) -> int:
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def _truncrem(a: int, b: int, bits: int, signed: bool) -> int:
    if b == 0:
        return 0
    return a - b * _truncdiv(a, b, bits, signed)


def _int_pow(a: int, b: int, bits: int, signed: bool) -> int:
    if b < 0:
        # Python would give a float; the IR keeps the integer type.
        if a == 1:
            return 1
        if a == -1:
            return 1 if b % 2 == 0 else -1
        return 0
    # Exponentiation by squaring modulo 2**bits: the same as wrapping after every multiply.
    return pow(a, b, 1 << bits)


def _shl(a: int, b: int, bits: int, signed: bool) -> int:
    return a << b if 0 <= b < bits else 0


def _shr(a: int, b: int, bits: int, signed: bool) -> int:
    # Python's >> on a negative int is arithmetic; unsigned values are never negative here.
    if 0 <= b < bits:
        return a >> b
    return -1 if a < 0 else 0


_INT_BINARY: dict[Opcode, _IntFn] = {
    Opcode.ADD: lambda a, b, n, s: a + b,
    Opcode.SUB: lambda a, b, n, s: a - b,
    Opcode.MUL: lambda a, b, n, s: a * b,
    Opcode.FLOORDIV: _floordiv,
    Opcode.FLOORMOD: _floormod,
    Opcode.DIV: _truncdiv,
    Opcode.REM: _truncrem,
    Opcode.POW: _int_pow,
    Opcode.AND: lambda a, b, n, s: a & b,
    Opcode.OR: lambda a, b, n, s: a | b,
    Opcode.XOR: lambda a, b, n, s: a ^ b,
    Opcode.SHL: _shl,
    Opcode.SHR: _shr,
}

_INT_UNARY: dict[Opcode, Callable[[int], int]] = {
    Opcode.NEG: lambda a: -a,
    Opcode.INVERT: lambda a: ~a,
    Opcode.ABS: abs,
}

# -- float ops: NumPy ufuncs on scalars keep the operand's width ------------------------

_FLOAT_BINARY: dict[Opcode, np.ufunc] = {
    Opcode.ADD: np.add,
    Opcode.SUB: np.subtract,
    Opcode.MUL: np.multiply,
    Opcode.TRUEDIV: np.true_divide,
    Opcode.FLOORDIV: np.floor_divide,
    Opcode.FLOORMOD: np.remainder,
}

_FLOAT_UNARY: dict[Opcode, np.ufunc] = {
    Opcode.NEG: np.negative,
    Opcode.ABS: np.absolute,
}

_BOOL_BINARY: dict[Opcode, Callable[[bool, bool], bool]] = {
    Opcode.AND: lambda a, b: a and b,
    Opcode.OR: lambda a, b: a or b,
    Opcode.XOR: lambda a, b: a != b,
}

_COMPARE: dict[Opcode, Callable[[Any, Any], Any]] = {
    Opcode.EQ: lambda a, b: a == b,
    Opcode.NE: lambda a, b: a != b,
    Opcode.LT: lambda a, b: a < b,
    Opcode.LE: lambda a, b: a <= b,
    Opcode.GT: lambda a, b: a > b,
    Opcode.GE: lambda a, b: a >= b,
}


def _math_via_double(fn: Callable[[float], float]) -> Callable[[Scalar], Scalar]:
    """A libm function NumPy lacks (erf, erfc): computed in f64, rounded to the operand's type."""

    def apply(x: Scalar) -> Scalar:
        return x.dtype.type(fn(float(x)))  # type: ignore[no-any-return]

    return apply


def _gamma(x: float) -> float:
    """C ``tgamma`` (what numba and libdevice compute; CPython's ``math.gamma`` raises
    instead): ``copysign(inf, x)`` at zero, NaN at negative integers and -inf, inf past
    the largest finite value."""
    try:
        return math.gamma(x)
    except ValueError:
        return math.copysign(math.inf, x) if x == 0 else math.nan
    except OverflowError:
        return math.inf


def _lgamma(x: float) -> float:
    """C ``lgamma``: ``log|gamma(x)|``, inf at the poles (zero and negative integers)."""
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):
        return math.inf


def _rsqrt(x: Scalar) -> Scalar:
    """``1/sqrt(x)`` rounded twice, in ``x``'s type: what the fastmath rewrite replaced
    (a device's approximate reciprocal square root may differ by a few ulps)."""
    return x.dtype.type(1) / np.sqrt(x)  # type: ignore[no-any-return]


MATH_IMPL: dict[str, Callable[..., Scalar]] = {
    "sqrt": np.sqrt,
    "rsqrt": _rsqrt,
    "exp": np.exp,
    "exp2": np.exp2,
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "erf": _math_via_double(math.erf),
    "erfc": _math_via_double(math.erfc),
    "gamma": _math_via_double(_gamma),
    "lgamma": _math_via_double(_lgamma),
    "fabs": np.fabs,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "rint": np.rint,  # round half to even
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "copysign": np.copysign,
    "fmod": np.fmod,
}
assert MATH_IMPL.keys() == MATH_FUNCTIONS.keys()
"""Each ``MATH`` function's meaning: NumPy's ufunc in the operand's float type (NaN/inf,
never an exception), or Python's ``math`` function in double for the few without one."""


class SemanticsError(ValueError):
    """``eval_op`` was asked for an opcode/type combination the IR does not allow.

    Verified IR never triggers it; seeing it means a compiler bug upstream.
    """


def eval_op_unchecked(
    opcode: Opcode,
    attrs: Mapping[str, Any],
    operands: Sequence[Scalar],
    result_type: ScalarType,
) -> Scalar:
    """``eval_op`` without the floating-point error state or the result-type check.

    Callers evaluating many ops (the interpreter) enter ``np.errstate(all="ignore")`` once.
    """
    dtype = result_type.dtype
    if opcode is Opcode.CONST:
        return dtype.type(attrs["value"])  # type: ignore[no-any-return]
    if opcode in COMPARE:
        a, b = operands
        return np.bool_(_COMPARE[opcode](a, b))
    if opcode is Opcode.SELECT:
        c, a, b = operands
        return a if c else b
    if opcode is Opcode.CAST:
        x = operands[0]
        if x.dtype.kind == "f" and dtype.kind in "iu":
            v = float_to_int(float(x), result_type.bits, dtype.kind == "i")
            return dtype.type(v)  # type: ignore[no-any-return]
        return x.astype(dtype)  # type: ignore[no-any-return]
    if opcode is Opcode.MIN or opcode is Opcode.MAX:
        a, b = operands
        # Python's min/max: the first operand wins ties and NaN comparisons.
        wins: bool = bool(_COMPARE[Opcode.LT if opcode is Opcode.MIN else Opcode.GT](b, a))
        return b if wins else a
    if opcode is Opcode.MATH:
        name = attrs["fn"]
        fn = MATH_IMPL.get(name)
        if fn is None or len(operands) != MATH_FUNCTIONS[name]:
            raise SemanticsError(f"math function {name!r} with {len(operands)} operands")
        return fn(*operands)
    kind = dtype.kind
    if kind in "iu":
        bits, signed = result_type.bits, kind == "i"
        if len(operands) == 2 and opcode in _INT_BINARY:
            r = _INT_BINARY[opcode](int(operands[0]), int(operands[1]), bits, signed)
            return dtype.type(wrap_int(r, bits, signed))  # type: ignore[no-any-return]
        if len(operands) == 1 and opcode in _INT_UNARY:
            r = _INT_UNARY[opcode](int(operands[0]))
            return dtype.type(wrap_int(r, bits, signed))  # type: ignore[no-any-return]
    elif kind == "f":
        if len(operands) == 2 and opcode is Opcode.POW:
            # The scalar ``**`` is C pow. ``np.power`` on scalars takes a sqrt shortcut for an
            # exponent of 0.5 (pow(-inf, 0.5) would give nan, pow(-0.0, 0.5) -0.0).
            return operands[0] ** operands[1]  # type: ignore[no-any-return, operator]
        if len(operands) == 2 and opcode in _FLOAT_BINARY:
            return _FLOAT_BINARY[opcode](operands[0], operands[1])  # type: ignore[no-any-return]
        if len(operands) == 1 and opcode in _FLOAT_UNARY:
            return _FLOAT_UNARY[opcode](operands[0])  # type: ignore[no-any-return]
    elif kind == "b":
        if len(operands) == 2 and opcode in _BOOL_BINARY:
            return np.bool_(_BOOL_BINARY[opcode](bool(operands[0]), bool(operands[1])))
        if len(operands) == 1 and opcode is Opcode.NOT:
            return np.bool_(not operands[0])
    raise SemanticsError(
        f"{opcode} with {len(operands)} operand(s) is not defined for result type {result_type}"
    )


def eval_op(
    opcode: Opcode,
    attrs: Mapping[str, Any],
    operands: Sequence[Scalar],
    result_type: ScalarType,
) -> Scalar:
    """The value of one scalar op: ``opcode(operands) {attrs} : result_type``.

    Operands are NumPy scalars of the types the verifier requires; the result is a NumPy
    scalar of ``result_type``. ``LOAD`` and ``SHAPE`` read arrays and are the interpreter's.
    Raises ``SemanticsError`` for combinations verified IR cannot contain.
    """
    if opcode is Opcode.LOAD or opcode is Opcode.SHAPE:
        raise SemanticsError(f"{opcode} reads an array; it is not a scalar op")
    with np.errstate(all="ignore"):
        result = eval_op_unchecked(opcode, attrs, operands, result_type)
    if not isinstance(result, np.generic) or result.dtype != result_type.dtype:
        got = result.dtype if isinstance(result, np.generic) else type(result).__name__
        raise SemanticsError(f"{opcode} produced {got}, expected {result_type}")
    return result


__all__ = ["SemanticsError", "eval_op", "eval_op_unchecked", "float_to_int", "wrap_int"]
