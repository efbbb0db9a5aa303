"""The NumPy scalar functions that lower to the IR's own ops (no ``MATH`` function of their
own): arithmetic, bitwise, logical and comparison ufuncs called by name, ``np.clip``,
``np.fmin``/``np.fmax``, ``np.maximum``/``np.minimum`` on floats, ``np.signbit``,
``np.deg2rad``/``np.rad2deg``, ``np.round`` (with constant decimals too),
``np.reciprocal`` and ``np.bitwise_count``.

Each is written as NumPy 2 computes it on scalars (their result type comes from NumPy
itself, ``promote.call_result``); docs/limits.md lists this inventory and what is left out.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from offload.frontend.arith import Arith
from offload.frontend.core import LoweringCore
from offload.frontend.optables import OPCODES
from offload.frontend.values import Scalar, Val
from offload.ir.builder import Builder
from offload.ir.core import Value
from offload.ir.ops import Opcode
from offload.ir.types import BOOL, F64, I64, U8, U64, ScalarType

_ARITH = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "truediv",
          "true_divide": "truediv", "left_shift": "lshift", "right_shift": "rshift",
          "bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor"}  # fmt: skip
"""Binary ufuncs that are one operator on operands of the result type."""
_COMPARE = {"equal": Opcode.EQ, "not_equal": Opcode.NE, "less": Opcode.LT,
            "less_equal": Opcode.LE, "greater": Opcode.GT, "greater_equal": Opcode.GE}  # fmt: skip
_LOGICAL = {"logical_and": Opcode.AND, "logical_or": Opcode.OR, "logical_xor": Opcode.XOR}


@dataclass(frozen=True)
class Library:
    """Lowers ``intrinsics.LIBRARY_UFUNCS`` (and float ``np.maximum``/``np.minimum``)."""

    core: LoweringCore
    arith: Arith

    def lower_math(self, name: str, x: Scalar) -> Scalar:
        """``math.degrees``/``math.radians``: ``x * (180.0 / pi)`` in double (CPython)."""
        scale = _scaled(180.0, np.pi) if name == "degrees" else _scaled(np.pi, 180.0)
        return Scalar(scale(self, [self.core.convert(x, F64, True).value], F64), True)

    def lower(self, name: str, xs: list[Scalar], rt: ScalarType, node: ast.Call) -> Val | None:
        """``np.<name>(*xs)`` whose NumPy result type is ``rt``; ``None`` if ``name`` is not
        one of this module's."""
        b = self.core.b
        if name in _COMPARE:
            return Scalar(self.arith.compare(_COMPARE[name], xs[0], xs[1], node).value, False)
        if name in _LOGICAL or name == "logical_not":
            ts = [self.core.truth(s, node).value for s in xs]
            if name == "logical_not":
                return Scalar(b.unary(Opcode.NOT, ts[0]), False)
            return Scalar(b.binary(_LOGICAL[name], ts[0], ts[1]), False)
        if name == "signbit":
            return self._signbit(xs[0])
        if name == "bitwise_count":
            return self._bitwise_count(xs[0])
        if name in ("round", "around") and len(xs) == 2:
            return self.round_to(xs[0], xs[1], rt, node)
        if name == "reciprocal" and not rt.is_float:
            # NumPy's integer reciprocal (1 // x, warning at 0) is left out: docs/limits.md
            raise self.core.unsupported(node, "np.reciprocal of an integer", "write 1.0 / x")
        lowering = _BY_NAME.get(name)
        if lowering is None and name not in _ARITH:
            return None
        conv = [self.core.convert(s, rt, False).value for s in xs]
        if name in _ARITH:
            opcode = OPCODES[_ARITH[name]]
            if rt.is_bool:  # NumPy: bool + bool is or, bool * bool is and
                opcode = {Opcode.ADD: Opcode.OR, Opcode.MUL: Opcode.AND}.get(opcode, opcode)
            return Scalar(b.binary(opcode, conv[0], conv[1]), False)
        assert lowering is not None
        return Scalar(lowering(self, conv, rt), False)

    def round_to(self, x: Scalar, decimals: Scalar, rt: ScalarType, node: ast.Call) -> Scalar:
        """``np.round(x, decimals)`` (and ``round`` of a NumPy scalar) as NumPy 2 computes it:
        for a float, ``rint(x * f) / f`` with ``f = 10**decimals`` (``rint(x / f) * f`` for
        negative ``decimals``), ``f`` NumPy's ``power_of_ten`` in double cast to ``x``'s
        type; an integer to ``decimals >= 0`` is itself. ``decimals`` is a constant."""
        d = decimals.const
        if d is None or isinstance(d, float) or not (decimals.type.is_int or decimals.type.is_bool):
            raise self.core.unsupported(
                node,
                "rounding to a number of decimals that is not a constant integer",
                "write the decimals as an integer literal",
            )
        d = int(d)
        if not rt.is_float:
            if d >= 0:
                return self.core.convert(x, rt, False)
            raise self.core.unsupported(
                node,
                "rounding an integer to negative decimals",
                "round a float: np.round(x * 1.0, decimals)",
            )
        b = self.core.b
        v = self.core.convert(x, rt, False).value
        with np.errstate(over="ignore"):  # (NumPy's f overflows to inf the same way)
            f = b.const(float(rt.dtype.type(power_of_ten(abs(d)))), rt)
        scale, unscale = (Opcode.MUL, Opcode.TRUEDIV) if d >= 0 else (Opcode.TRUEDIV, Opcode.MUL)
        rounded = b.math("rint", [b.binary(scale, v, f)])
        return Scalar(b.binary(unscale, rounded, f), False)

    def _float_extremum(self, vals: list[Value], rt: ScalarType, name: str) -> Value:
        """``np.maximum``/``np.minimum`` (NaN from either side wins; otherwise ``a if a > b
        else b``, so ``np.maximum(-0.0, 0.0)`` is ``0.0``) and ``np.fmax``/``np.fmin`` (NaN
        loses: ``a if a >= b or b != b else b``)."""
        b = self.core.b
        x, y = vals
        if not rt.is_float:
            return b.binary(Opcode.MAX if name in ("maximum", "fmax") else Opcode.MIN, x, y)
        if name in ("maximum", "minimum"):
            pick = b.binary(Opcode.GT if name == "maximum" else Opcode.LT, x, y)
            return b.select(_isnan(b, x), x, b.select(pick, x, y))
        keep = b.binary(Opcode.GE if name == "fmax" else Opcode.LE, x, y)
        return b.select(b.binary(Opcode.OR, keep, _isnan(b, y)), x, y)

    def _clip(self, vals: list[Value], rt: ScalarType) -> Value:
        """NumPy 2's ``clip``: ``lo`` where ``x < lo``, then ``hi`` where above it (``hi``
        wins when ``lo > hi``); NaN if any operand is NaN. Checked against ``np.clip`` over
        every triple of signed zeros, infinities and NaN (tests)."""
        b = self.core.b
        x, lo, hi = vals
        low = b.select(b.binary(Opcode.LT, x, lo), lo, x)
        out = b.select(b.binary(Opcode.GT, low, hi), hi, low)
        if rt.is_float:
            for v in (hi, lo, x):
                out = b.select(_isnan(b, v), v, out)
        return out

    def _signbit(self, s: Scalar) -> Scalar:
        b = self.core.b
        t = s.type
        if t.is_float:  # the sign of -0.0 and of a negative NaN too
            one = b.const(1.0, t)
            sign = b.math("copysign", [one, s.value])
            return Scalar(b.binary(Opcode.LT, sign, b.const(0.0, t)), False)
        if s.weak or t.is_signed:
            it = I64 if s.weak else t
            x = self.core.convert(s, it).value
            return Scalar(b.binary(Opcode.LT, x, b.const(0, it)), False)
        return self.core.const(False, (BOOL, False))

    def _bitwise_count(self, s: Scalar) -> Scalar:
        """The number of 1 bits of ``|x|`` (NumPy 2), as uint8: a 64-bit SWAR popcount of
        ``|x|`` widened to uint64 (``|INT64_MIN|`` wraps to ``2**63``: one bit, as NumPy)."""
        b = self.core.b
        t = I64 if s.weak else s.type
        x = self.core.convert(s, t).value
        if t.is_signed:
            x = b.cast(x, I64)
            zero = b.const(0, I64)
            x = b.select(b.binary(Opcode.LT, x, zero), b.unary(Opcode.NEG, x), x)
        v = b.cast(x, U64)

        def k(c: int) -> Value:
            return b.const(c, U64)

        v = b.binary(
            Opcode.SUB,
            v,
            b.binary(Opcode.AND, b.binary(Opcode.SHR, v, k(1)), k(0x5555555555555555)),
        )
        v = b.binary(
            Opcode.ADD,
            b.binary(Opcode.AND, v, k(0x3333333333333333)),
            b.binary(Opcode.AND, b.binary(Opcode.SHR, v, k(2)), k(0x3333333333333333)),
        )
        v = b.binary(
            Opcode.AND,
            b.binary(Opcode.ADD, v, b.binary(Opcode.SHR, v, k(4))),
            k(0x0F0F0F0F0F0F0F0F),
        )
        v = b.binary(Opcode.SHR, b.binary(Opcode.MUL, v, k(0x0101010101010101)), k(56))
        return Scalar(b.cast(v, U8), False, None, True)


def power_of_ten(n: int) -> float:
    """NumPy's ``power_of_ten`` (``multiarraymodule``'s, for ``round``): exact up to
    ``1e8``, then ``1e9`` multiplied by ten ``n - 9`` times in double (``inf`` past
    ``1e308``)."""
    if n < 9:
        return float(10**n)
    ret = 1e9
    for _ in range(n - 9):
        ret *= 10.0
        if ret == math.inf:
            break
    return ret


def _isnan(b: Builder, v: Value) -> Value:
    return b.binary(Opcode.NE, v, v)


def _scaled(num: float, den: float) -> Callable[[Library, list[Value], ScalarType], Value]:
    """``x * (num / den)`` with the ratio computed in the result's float type (NumPy's
    ``deg2rad``/``rad2deg``: ``x * (180.0f / NPY_PIf)`` in float32)."""

    def lower(lib: Library, vals: list[Value], rt: ScalarType) -> Value:
        ratio = np.divide(rt.dtype.type(num), rt.dtype.type(den))
        return lib.core.b.binary(Opcode.MUL, vals[0], lib.core.b.const(float(ratio), rt))

    return lower


def _identity(lib: Library, vals: list[Value], rt: ScalarType) -> Value:
    return vals[0]


def _invert(lib: Library, vals: list[Value], rt: ScalarType) -> Value:
    return lib.core.b.unary(Opcode.NOT if rt.is_bool else Opcode.INVERT, vals[0])


def _reciprocal(lib: Library, vals: list[Value], rt: ScalarType) -> Value:
    return lib.core.b.binary(Opcode.TRUEDIV, lib.core.b.const(1.0, rt), vals[0])


def _round(lib: Library, vals: list[Value], rt: ScalarType) -> Value:
    return lib.core.b.math("rint", vals) if rt.is_float else vals[0]


_BY_NAME: dict[str, Callable[[Library, list[Value], ScalarType], Value]] = {
    "positive": _identity,
    "invert": _invert,
    "reciprocal": _reciprocal,
    "round": _round,
    "around": _round,
    "deg2rad": _scaled(np.pi, 180.0),
    "radians": _scaled(np.pi, 180.0),
    "rad2deg": _scaled(180.0, np.pi),
    "degrees": _scaled(180.0, np.pi),
    "clip": lambda lib, vals, rt: lib._clip(vals, rt),
    "fmin": lambda lib, vals, rt: lib._float_extremum(vals, rt, "fmin"),
    "fmax": lambda lib, vals, rt: lib._float_extremum(vals, rt, "fmax"),
    "minimum": lambda lib, vals, rt: lib._float_extremum(vals, rt, "minimum"),
    "maximum": lambda lib, vals, rt: lib._float_extremum(vals, rt, "maximum"),
}
