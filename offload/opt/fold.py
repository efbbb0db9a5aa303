"""Constant folding and algebraic simplification (pass ``fold``).

Folding evaluates through ``offload.ir.semantics.eval_op``, the interpreter's own scalar
semantics, so a folded constant is exactly what the interpreter would compute. The
algebraic rules below are exact for every input of their types: float rules that change a
value (``x + 0.0 -> x`` is wrong for ``x = -0.0``; ``x * 0.0 -> 0.0`` is wrong for inf and
NaN) are applied only under ``fastmath``. Integer rules may reassociate, because wrapping
addition and multiplication are associative and commutative modulo ``2**bits``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from offload.ir.core import Function, Op, Value
from offload.ir.ops import Opcode
from offload.ir.types import ScalarType
from offload.opt.base import FunctionPass
from offload.opt.rewrite import Rewriter, Rule
from offload.opt.util import op_type as _t
from offload.options import CompileOptions

Apply = Callable[[Op, Rewriter], Value | None]


def _intlike(op: Op) -> bool:
    return _t(op).is_int or _t(op).is_bool


def _operand_intlike(op: Op) -> bool:
    t = op.operands[0].type
    return isinstance(t, ScalarType) and (t.is_int or t.is_bool)


def _all_ones(t: ScalarType) -> int | bool:
    if t.is_bool:
        return True
    return -1 if t.is_signed else (1 << t.bits) - 1


def _zero(t: ScalarType) -> object:
    return False if t.is_bool else (0 if t.is_int else 0.0)


def _one(t: ScalarType) -> object:
    return 1 if t.is_int else 1.0


def _right_is(op: Op, rw: Rewriter, value: object) -> bool:
    return rw.is_const(op.operands[1], value)


def _same(op: Op) -> bool:
    return op.operands[0] is op.operands[1]


def _add_zero(op: Op, rw: Rewriter) -> Value | None:
    t = _t(op)
    if t.is_int and _right_is(op, rw, 0):
        return op.operands[0]
    # x + (-0.0) == x for every float x, including -0.0 and NaN; x + 0.0 only under fastmath.
    if t.is_float and (_right_is(op, rw, -0.0) or (rw.fastmath and _right_is(op, rw, 0.0))):
        return op.operands[0]
    return None


def _sub_zero(op: Op, rw: Rewriter) -> Value | None:
    t = _t(op)
    # x - 0.0 == x for every float x (-0.0 - 0.0 is -0.0); ints: x - 0 == x.
    if _right_is(op, rw, _zero(t)) and not t.is_bool:
        return op.operands[0]
    return None


def _sub_self(op: Op, rw: Rewriter) -> Value | None:
    t = _t(op)
    if _same(op) and (t.is_int or (rw.fastmath and t.is_float)):
        return rw.make_const(0, t)
    return None


def _sub_const_to_add(op: Op, rw: Rewriter) -> Value | None:
    t = _t(op)
    c = rw.const(op.operands[1])
    if t.is_int and t.is_signed and c is not None and c != 0:
        neg = rw.make_const(-c, t)  # wraps: x - INT_MIN == x + INT_MIN
        return rw.emit(Opcode.ADD, [op.operands[0], neg], t)
    return None


def _reassociate(op: Op, rw: Rewriter) -> Value | None:
    # (x op c1) op c2 -> x op (c1 op c2) for wrapping integer + and *.
    t = _t(op)
    c2 = rw.const(op.operands[1])
    inner = rw.def_of(op.operands[0], op.opcode)
    if not t.is_int or c2 is None or inner is None:
        return None
    c1 = rw.const(inner.operands[1])
    if c1 is None:
        return None
    c = rw.emit(op.opcode, [inner.operands[1], op.operands[1]], t)
    return rw.emit(op.opcode, [inner.operands[0], c], t)


def _mul_one(op: Op, rw: Rewriter) -> Value | None:
    t = _t(op)
    return op.operands[0] if not t.is_bool and _right_is(op, rw, _one(t)) else None


def _mul_zero(op: Op, rw: Rewriter) -> Value | None:
    t = _t(op)
    if (t.is_int and _right_is(op, rw, 0)) or (
        rw.fastmath and t.is_float and _right_is(op, rw, 0.0)
    ):
        return op.operands[1]
    return None


def _div_one(op: Op, rw: Rewriter) -> Value | None:
    t = _t(op)
    return op.operands[0] if not t.is_bool and _right_is(op, rw, _one(t)) else None


def _floordiv_one(op: Op, rw: Rewriter) -> Value | None:
    # ints only: a float x // 1.0 is floor(x) (inf // 1.0 is NaN)
    return op.operands[0] if _t(op).is_int and _right_is(op, rw, 1) else None


def _mod_one(op: Op, rw: Rewriter) -> Value | None:
    t = _t(op)
    return rw.make_const(0, t) if t.is_int and _right_is(op, rw, 1) else None


def _idempotent(op: Op, rw: Rewriter) -> Value | None:
    return (
        op.operands[0]
        if _same(op) and (_intlike(op) or op.opcode in (Opcode.MIN, Opcode.MAX))
        else None
    )


def _xor_self(op: Op, rw: Rewriter) -> Value | None:
    return rw.make_const(_zero(_t(op)), _t(op)) if _same(op) and _intlike(op) else None


def _identity_right(value_of: str) -> Apply:
    def apply(op: Op, rw: Rewriter) -> Value | None:
        t = _t(op)
        if not _intlike(op):
            return None
        v = _zero(t) if value_of == "zero" else _all_ones(t)
        return op.operands[0] if _right_is(op, rw, v) else None

    return apply


def _absorb_right(value_of: str) -> Apply:
    def apply(op: Op, rw: Rewriter) -> Value | None:
        t = _t(op)
        if not _intlike(op):
            return None
        v = _zero(t) if value_of == "zero" else _all_ones(t)
        return op.operands[1] if _right_is(op, rw, v) else None

    return apply


def _reciprocal_sqrt(op: Op, rw: Rewriter) -> Value | None:
    """``1.0 / sqrt(x)`` -> ``rsqrt(x)`` under fastmath only: one approximate instruction on
    a GPU for two correctly rounded ones (the result may differ by a few ulps)."""
    if not (rw.fastmath and _t(op).is_float and rw.is_const(op.operands[0], 1.0)):
        return None
    root = rw.def_of(op.operands[1], Opcode.MATH)
    if root is None or root.attrs.get("fn") != "sqrt":
        return None
    return rw.emit(Opcode.MATH, list(root.operands), _t(op), {"fn": "rsqrt"})


def _shift_zero(op: Op, rw: Rewriter) -> Value | None:
    return op.operands[0] if _right_is(op, rw, 0) else None


def _involution(op: Op, rw: Rewriter) -> Value | None:
    inner = rw.def_of(op.operands[0], op.opcode)
    return inner.operands[0] if inner is not None else None


def _cmp_self(result: bool) -> Apply:
    def apply(op: Op, rw: Rewriter) -> Value | None:
        # Only for ints and bools: a float NaN is not equal to itself.
        if _same(op) and _operand_intlike(op):
            return rw.make_const(result, _t(op))
        return None

    return apply


def _select(op: Op, rw: Rewriter) -> Value | None:
    c, a, b = op.operands
    cv = rw.const(c)
    if cv is not None:
        return a if cv else b
    if a is b:
        return a
    t = _t(op)
    if t.is_bool and rw.is_const(a, True) and rw.is_const(b, False):
        return c
    if t.is_bool and rw.is_const(a, False) and rw.is_const(b, True):
        return rw.emit(Opcode.NOT, [c], t)
    return None


def _cast_same(op: Op, rw: Rewriter) -> Value | None:
    return op.operands[0] if op.operands[0].type == op.result.type else None


_NEGATED = {
    Opcode.LT: Opcode.GE,
    Opcode.GE: Opcode.LT,
    Opcode.GT: Opcode.LE,
    Opcode.LE: Opcode.GT,
    Opcode.EQ: Opcode.NE,
    Opcode.NE: Opcode.EQ,
}


def _not_compare(op: Op, rw: Rewriter) -> Value | None:
    inner = rw.defs.get(op.operands[0])
    if inner is None or inner.opcode not in _NEGATED or not _operand_intlike(inner):
        return None
    return rw.emit(_NEGATED[inner.opcode], list(inner.operands), _t(op))


Op_ = Opcode
RULES: tuple[Rule, ...] = (
    Rule("add-zero", Op_.ADD, "x + 0 -> x (ints); x + -0.0 -> x (floats)", _add_zero),
    Rule("add-reassoc", Op_.ADD, "(x + c1) + c2 -> x + (c1 + c2)  (ints, mod 2**n)", _reassociate),
    Rule("sub-zero", Op_.SUB, "x - 0 -> x (ints and floats: -0.0 - 0.0 == -0.0)", _sub_zero),
    Rule("sub-self", Op_.SUB, "x - x -> 0  (ints; floats only under fastmath)", _sub_self),
    Rule("sub-const", Op_.SUB, "x - c -> x + (-c)  (signed ints, mod 2**n)", _sub_const_to_add),
    Rule("mul-one", Op_.MUL, "x * 1 -> x (ints and floats, exact)", _mul_one),
    Rule("mul-zero", Op_.MUL, "x * 0 -> 0  (ints; floats only under fastmath)", _mul_zero),
    Rule("mul-reassoc", Op_.MUL, "(x * c1) * c2 -> x * (c1 * c2)  (ints, mod 2**n)", _reassociate),
    Rule("floordiv-one", Op_.FLOORDIV, "x // 1 -> x  (ints: 2.5 // 1.0 is 2.0)", _floordiv_one),
    Rule("div-one", Op_.DIV, "x / 1 -> x (truncating)", _div_one),
    Rule("truediv-one", Op_.TRUEDIV, "x / 1.0 -> x (exact)", _div_one),
    Rule("rsqrt", Op_.TRUEDIV, "1.0 / sqrt(x) -> rsqrt(x)  (fastmath only)", _reciprocal_sqrt),
    Rule("floormod-one", Op_.FLOORMOD, "x % 1 -> 0  (ints)", _mod_one),
    Rule("rem-one", Op_.REM, "rem(x, 1) -> 0  (ints)", _mod_one),
    Rule("min-self", Op_.MIN, "min(x, x) -> x", _idempotent),
    Rule("max-self", Op_.MAX, "max(x, x) -> x", _idempotent),
    Rule("and-self", Op_.AND, "x & x -> x", _idempotent),
    Rule("or-self", Op_.OR, "x | x -> x", _idempotent),
    Rule("xor-self", Op_.XOR, "x ^ x -> 0", _xor_self),
    Rule("and-ones", Op_.AND, "x & -1 -> x", _identity_right("ones")),
    Rule("and-zero", Op_.AND, "x & 0 -> 0", _absorb_right("zero")),
    Rule("or-zero", Op_.OR, "x | 0 -> x", _identity_right("zero")),
    Rule("or-ones", Op_.OR, "x | -1 -> -1", _absorb_right("ones")),
    Rule("xor-zero", Op_.XOR, "x ^ 0 -> x", _identity_right("zero")),
    Rule("shl-zero", Op_.SHL, "x << 0 -> x", _shift_zero),
    Rule("shr-zero", Op_.SHR, "x >> 0 -> x", _shift_zero),
    Rule("neg-neg", Op_.NEG, "-(-x) -> x  (ints wrap; floats exact)", _involution),
    Rule("not-not", Op_.NOT, "not not x -> x", _involution),
    Rule("invert-invert", Op_.INVERT, "~~x -> x", _involution),
    Rule("not-compare", Op_.NOT, "not (a < b) -> a >= b  (ints only: NaN)", _not_compare),
    Rule("eq-self", Op_.EQ, "x == x -> true  (ints only: NaN)", _cmp_self(True)),
    Rule("le-self", Op_.LE, "x <= x -> true  (ints only)", _cmp_self(True)),
    Rule("ge-self", Op_.GE, "x >= x -> true  (ints only)", _cmp_self(True)),
    Rule("ne-self", Op_.NE, "x != x -> false  (ints only)", _cmp_self(False)),
    Rule("lt-self", Op_.LT, "x < x -> false", _cmp_self(False)),
    Rule("gt-self", Op_.GT, "x > x -> false", _cmp_self(False)),
    Rule("select", Op_.SELECT, "select(true, a, b) -> a; select(c, a, a) -> a; ...", _select),
    Rule("cast-same", Op_.CAST, "cast<T>(x : T) -> x", _cast_same),
)
"""The algebraic rules, in the order they are tried for an opcode."""


@dataclass(frozen=True)
class ConstantFolding(FunctionPass):
    """Fold ops over constants and apply the algebraic ``RULES`` until nothing changes."""

    name = "fold"
    fastmath: bool = False
    """Also apply float rules that can change a result (``x + 0.0 -> x``, ``x * 0.0``)."""

    @classmethod
    def from_options(cls, options: CompileOptions) -> ConstantFolding:
        return cls(fastmath=options.fastmath)

    def rewrite(self, fn: Function) -> Function:
        for _ in range(8):
            if not Rewriter(fn, RULES, self.fastmath).run():
                break
        return fn
