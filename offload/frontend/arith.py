"""Operator typing of the lowering: ``a <op> b``, unary operators and comparisons with
NEP 50 promotion, constant folding the way CPython computes, and the casts that make IR
operands match. Used by expressions, conditions, calls, statements and delayed arrays."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from offload.diagnostics import TypeMismatch
from offload.frontend.core import LoweringCore, fits_type
from offload.frontend.optables import NONNEG_KEEPING, OPCODES, PY_COMPARE, PY_UNARY, SYMBOL
from offload.frontend.promote import (
    BINARY_OPERATORS,
    binary_result,
    describe_key,
    join,
    unary_result,
)
from offload.frontend.values import Scalar
from offload.ir.ops import Opcode
from offload.ir.types import BOOL, F64, I64, ScalarType


@dataclass(frozen=True)
class Arith:
    """Typed arithmetic over ``Scalar`` values (one instance per lowering)."""

    core: LoweringCore

    def binop(self, op: str, a: Scalar, b: Scalar, node: ast.AST | None) -> Scalar:
        """``a <op> b`` with NEP 50 typing (``op``: a key of ``BINARY_OPERATORS``)."""
        ka, kb = (a.type, a.weak), (b.type, b.weak)
        key = binary_result(op, ka, kb)
        if key is None:
            raise self.core.error(
                TypeMismatch,
                f"unsupported operand types for {SYMBOL[op]}: "
                f"'{describe_key(ka)}' and '{describe_key(kb)}'",
                node,
                hint="use ^ for the difference of bools" if op == "sub" else "",
            )
        if op == "pow" and a.weak and b.weak and isinstance(b.const, int) and b.const < 0:
            key = (F64, True)  # Python: int ** negative int is a float
        elif op == "pow":
            self.check_int_power(a, b, key[0], node)
        rt, weak = key
        if op == "truediv" or not rt.is_bool:
            opnd_t = rt
        else:
            opnd_t = BOOL
        folded = self._fold(op, a, b, key, node)
        if folded is not None:
            return folded
        x = self.core.convert(a, opnd_t).value
        y = self.core.convert(b, opnd_t).value
        opcode = OPCODES[op]
        if rt.is_bool and op == "add":
            opcode = Opcode.OR  # NumPy: bool + bool is logical or
        elif rt.is_bool and op == "mul":
            opcode = Opcode.AND
        # A sum or product of two values >= 0 stays >= 0 unless it wraps: in a narrow signed
        # type it can (int8: 28 + 100 == -128), so only int64 (indices stay below 2**62)
        # and unsigned types keep the fact.
        no_wrap = op not in ("add", "mul") or not rt.is_signed or rt.bits == 64
        nonneg = rt.is_int and op in NONNEG_KEEPING and a.nonneg and b.nonneg and no_wrap
        return Scalar(self.core.b.binary(opcode, x, y), weak, None, nonneg)

    def check_int_power(
        self, a: Scalar, b: Scalar, rt: ScalarType, node: ast.AST | None, name: str = "**"
    ) -> None:
        """Reject an integer power whose exponent may be negative: CPython's result type
        depends on its sign at run time, and NumPy raises for a negative one."""
        if not rt.is_int or b.type.is_bool or b.type.is_float or b.nonneg:
            return
        if b.const is not None and b.const >= 0:
            return
        if a.weak and b.weak and name == "**":
            what = "CPython would give a float for a negative one"
        else:
            what = "NumPy raises ValueError for a negative one"
        raise self.core.error(
            TypeMismatch,
            f"integer {name} with an exponent that may be negative ({what})",
            node,
            hint="write float(x) ** y, or use an exponent known to be >= 0 "
            "(an index or a range counter)",
        )

    def _fold(
        self, op: str, a: Scalar, b: Scalar, key: tuple[ScalarType, bool], node: ast.AST | None
    ) -> Scalar | None:
        """Fold an operation on two weak (Python) constants the way CPython computes it."""
        if not (a.weak and b.weak and a.const is not None and b.const is not None):
            return None
        try:
            r: Any = BINARY_OPERATORS[op](a.const, b.const)
        except (ArithmeticError, ValueError):
            return None
        if type(r) is not type(0 if key[0].is_int else False if key[0].is_bool else 0.0):
            return None
        if isinstance(r, int) and not isinstance(r, bool) and not -(2**63) <= r < 2**64:
            # CPython would compute this exactly; a 64-bit kernel would silently wrap it.
            # (In [2**63, 2**64) it stays a Python int that a uint64 partner accepts.)
            raise self.core.error(
                TypeMismatch,
                f"the constant {a.const} {SYMBOL[op]} {b.const} = {r} does not fit int64 or uint64",
                node,
                hint="integers in element functions are 64-bit; use a float constant",
            )
        return self.core.const(r, key)

    def unary(self, name: str, val: Scalar, node: ast.AST | None) -> Scalar:
        """``-x``, ``+x``, ``~x`` or ``abs(x)`` with Python/NumPy typing."""
        key = unary_result(name, (val.type, val.weak))
        if key is None:
            raise self.core.error(
                TypeMismatch,
                f"bad operand type for unary {name}: '{describe_key((val.type, val.weak))}'",
                node,
            )
        rt, weak = key
        if val.const is not None and weak and rt is not BOOL:
            fn: Callable[[Any], Any] = PY_UNARY.get(name, abs)
            return self.core.const(fn(int(val.const) if rt.is_int else val.const), key)
        x = self.core.convert(val, rt, weak)
        if name == "pos":
            return x
        if name == "invert":
            opcode = Opcode.NOT if rt.is_bool else Opcode.INVERT
            return Scalar(self.core.b.unary(opcode, x.value), weak)
        if name == "abs" and rt is BOOL:
            # NumPy: abs of a bool is the bool; Python: abs(True) is the int 1
            return self.core.convert(val, I64, True) if weak else x
        if name == "abs":
            return Scalar(self.core.b.unary(Opcode.ABS, x.value), weak, None, False)
        return Scalar(self.core.b.unary(Opcode.NEG, x.value), weak)

    def compare(self, opcode: Opcode, a: Scalar, b: Scalar, node: ast.AST) -> Scalar:
        """``a <opcode> b`` in the joined operand type; weak if both operands are."""
        key = join((a.type, a.weak), (b.type, b.weak))
        if key is None:
            raise self.core.error(TypeMismatch, "these values cannot be compared", node)
        weak = a.weak and b.weak
        if weak and a.const is not None and b.const is not None:
            return self.core.const(bool(PY_COMPARE[opcode](a.const, b.const)), (BOOL, True))
        exact = self._exact_int_compare(opcode, a, b)
        if exact is not None:
            return exact
        x = self.core.convert(a, key[0]).value
        y = self.core.convert(b, key[0]).value
        return Scalar(self.core.b.binary(opcode, x, y), weak)

    def _exact_int_compare(self, opcode: Opcode, a: Scalar, b: Scalar) -> Scalar | None:
        """NumPy 2 compares a NumPy integer with a Python int exactly, whatever the int's
        value (``np.uint8(5) > -3`` is True): compare in int64, which holds both, or for
        uint64 test the Python int's sign first. ``None`` when the usual path is exact."""
        if a.weak == b.weak:
            return None
        strong, weak = (b, a) if a.weak else (a, b)
        st = strong.type
        c = weak.const
        if st.is_int and type(c) is int and not fits_type(c, st):
            # A Python int beyond the strong type's range (2**64 - 1 against an int64):
            # the strong value lies wholly below it, or above it.
            lo, hi = (0, 1) if c > 0 else (1, 0)
            out = PY_COMPARE[opcode](lo, hi) if b.weak else PY_COMPARE[opcode](hi, lo)
            return self.core.const(bool(out), (BOOL, False))
        if not st.is_int or st.is_bool or st == I64 or not weak.type.is_int or weak.type.is_bool:
            return None
        if st.bits <= 32:
            x = self.core.convert(a, I64).value
            y = self.core.convert(b, I64).value
            return Scalar(self.core.b.binary(opcode, x, y), False)
        # uint64 against an int64 Python int: a negative one is below every uint64.
        below = bool(PY_COMPARE[opcode](-1, 0) if a.weak else PY_COMPARE[opcode](0, -1))
        if weak.nonneg or (weak.const is not None and int(weak.const) >= 0):
            return None
        if weak.const is not None:
            return self.core.const(below, (BOOL, False))
        zero = self.core.b.const(0, I64)
        negative = self.core.b.binary(Opcode.LT, weak.value, zero)
        x = self.core.b.cast(a.value, st) if a.weak else a.value
        y = self.core.b.cast(b.value, st) if b.weak else b.value
        unsigned = self.core.b.binary(opcode, x, y)
        fixed = self.core.b.const(below, BOOL)
        return Scalar(self.core.b.select(negative, fixed, unsigned), False)
