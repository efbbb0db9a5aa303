"""Each divmod rule's algebra holds for two's complement integers, under the rule's
preconditions; the pass applies the rules where range facts allow and not elsewhere.

Rules without division (recombine of the floor pair, shifts and masks by powers of two) are
proved by z3 on 64-bit vectors. Proofs through a bit-vector *division* time out in z3 at 16
bits and more, so those rules are proved at 8 bits (the algebra does not depend on the
width) and also checked exhaustively over all i8 operands with the IR's own semantics
(``semantics.eval_op``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import z3

from offload.ir.ops import Opcode
from offload.ir.semantics import eval_op
from offload.ir.types import I8
from offload.opt.divmod import LATE_RULES, RULES
from tests.opt.golden import filecheck, run_text

pytestmark = pytest.mark.unit


def _min(bits: int) -> z3.BitVecNumRef:
    return z3.BitVecVal(-(2 ** (bits - 1)), bits)


def floordiv(a: z3.BitVecRef, b: z3.BitVecRef) -> z3.ExprRef:
    """The IR's FLOORDIV: Python's // with x // 0 == 0 and INT_MIN // -1 == INT_MIN."""
    bits = a.size()
    q = z3.If(z3.And(a == _min(bits), b == -1), _min(bits), a / b)  # '/' is bvsdiv
    r = a - q * b
    adjust = z3.And(r != 0, (r < 0) != (b < 0))
    return z3.If(b == 0, z3.BitVecVal(0, bits), z3.If(adjust, q - 1, q))


def floormod(a: z3.BitVecRef, b: z3.BitVecRef) -> z3.ExprRef:
    return z3.If(b == 0, z3.BitVecVal(0, a.size()), a - floordiv(a, b) * b)


def prove(claim: z3.BoolRef, *pre: z3.BoolRef) -> None:
    # Bit-blasting decides the 8-bit division proofs; z3's default tactics do the 64-bit ones.
    small = any(isinstance(v, z3.BitVecRef) and v.size() <= 8 for v in z3.z3util.get_vars(claim))
    s = z3.Then("simplify", "bit-blast", "sat").solver() if small else z3.Solver()
    s.set("timeout", 30000)
    s.add(*pre, z3.Not(claim))
    assert s.check() == z3.unsat


def no_wrap(q: z3.BitVecRef, n: z3.BitVecRef, j: z3.BitVecRef) -> z3.BoolRef:
    """q*n + j computed without wrapping (in twice the width)."""
    bits = q.size()
    qq, nn, jj = (z3.SignExt(bits, v) for v in (q, n, j))
    total = qq * nn + jj
    return z3.And(total >= -(2 ** (bits - 1)), total < 2 ** (bits - 1))


def test_rule_table_names_each_rule_with_its_algebra() -> None:
    names = {r.name for r in RULES}
    assert {
        "recombine",
        "div-of-multiple",
        "mod-of-multiple",
        "floordiv-pow2",
        "floormod-pow2",
        "floordiv-nonneg",
        "floormod-nonneg",
        "decided-select",
        "nonneg-mark",
        "zero-divisor-select",
    } <= names
    assert {r.name for r in LATE_RULES} == {"divmod-pair"}
    assert all("->" in r.algebra for r in (*RULES, *LATE_RULES))


def test_recombine_is_identity_for_every_nonzero_divisor_64bit() -> None:
    lv, m = z3.BitVecs("l m", 64)
    prove(floordiv(lv, m) * m + floormod(lv, m) == lv, m != 0)


def test_recombine_with_zero_divisor_gives_zero_not_l() -> None:
    lv, m = z3.BitVecs("l m", 64)
    s = z3.Solver()
    s.add(m == 0, floordiv(lv, m) * m + floormod(lv, m) != lv)
    assert s.check() == z3.sat  # hence the select(m == 0, 0, l) the rule emits then


def test_recombine_of_truncating_pair_is_identity_for_nonzero_divisor() -> None:
    lv, m = z3.BitVecs("l m", 8)
    prove((lv / m) * m + z3.SRem(lv, m) == lv, m != 0, z3.Not(z3.And(lv == -128, m == -1)))


@pytest.mark.parametrize("mod", [False, True])
def test_div_and_mod_of_multiple_plus_small_remainder(mod: bool) -> None:
    q, n, j = z3.BitVecs("q n j", 8)
    pre = (j >= 0, j < n, no_wrap(q, n, j))
    if mod:
        prove(floormod(q * n + j, n) == j, *pre)
    else:
        prove(floordiv(q * n + j, n) == q, *pre)


@pytest.mark.parametrize("k", [0, 1, 3, 62])
def test_floordiv_and_floormod_by_power_of_two_are_shift_and_mask_64bit(k: int) -> None:
    x = z3.BitVec("x", 64)
    c = z3.BitVecVal(2**k, 64)
    prove(floordiv(x, c) == x >> k)
    prove(floormod(x, c) == x & (2**k - 1))


def truncdiv(a: z3.BitVecRef, b: z3.BitVecRef) -> z3.ExprRef:
    """The IR's DIV: C's truncating division with x / 0 == 0 (bvsdiv wraps INT_MIN / -1)."""
    return z3.If(b == 0, z3.BitVecVal(0, a.size()), a / b)


def truncrem(a: z3.BitVecRef, b: z3.BitVecRef) -> z3.ExprRef:
    return z3.If(b == 0, z3.BitVecVal(0, a.size()), z3.SRem(a, b))


def test_floor_ops_are_truncating_ops_for_nonnegative_operands() -> None:
    # y >= 0, not y >= 1: a zero divisor gives 0 under both (floordiv-nonneg, floormod-nonneg)
    x, y = z3.BitVecs("x y", 8)
    prove(floordiv(x, y) == truncdiv(x, y), x >= 0, y >= 0)
    prove(floormod(x, y) == truncrem(x, y), x >= 0, y >= 0)


def test_nonneg_truncating_ops_are_the_emitters_unsigned_division() -> None:
    # what emit/ops.py emits for div/rem {nonneg}: U(x) // U(s), s = 1 if y == 0 else y,
    # and 0 when y == 0
    x, y = z3.BitVecs("x y", 8)
    s = z3.If(y == 0, z3.BitVecVal(1, 8), y)
    zero = z3.BitVecVal(0, 8)
    prove(z3.If(y == 0, zero, z3.UDiv(x, s)) == truncdiv(x, y), x >= 0, y >= 0)
    prove(z3.If(y == 0, zero, z3.URem(x, s)) == truncrem(x, y), x >= 0, y >= 0)


def test_divmod_pair_is_exact_for_every_operand_and_zero_divisor() -> None:
    # divmod-pair: x % n == select(n == 0, 0, x - (x // n) * n), negative operands and
    # INT_MIN // -1 included, floor and truncating
    x, n = z3.BitVecs("x n", 8)
    zero = z3.BitVecVal(0, 8)
    prove(floormod(x, n) == z3.If(n == 0, zero, x - floordiv(x, n) * n))
    prove(truncrem(x, n) == z3.If(n == 0, zero, x - truncdiv(x, n) * n))


def test_divmod_pair_without_its_zero_guard_is_wrong_for_a_zero_divisor() -> None:
    x, n = z3.BitVecs("x n", 8)
    s = z3.Solver()
    s.add(n == 0, floormod(x, n) != x - floordiv(x, n) * n)
    assert s.check() == z3.sat


def test_zero_divisor_select_of_a_mod_by_a_multiple_is_the_mod() -> None:
    # zero-divisor-select: select(n == 0, 0, l % (n*p)) == l % (n*p), wrapping products too
    lv, n, p = z3.BitVecs("l n p", 8)
    zero = z3.BitVecVal(0, 8)
    for mod in (floormod, truncrem):
        prove(z3.If(n == 0, zero, mod(lv, n * p)) == mod(lv, n * p))
        prove(z3.If(n == 0, zero, mod(lv, 3 * n * p + n)) == mod(lv, 3 * n * p + n))


def test_zero_divisor_select_is_wrong_when_the_modulus_is_not_a_multiple() -> None:
    lv, n, m = z3.BitVecs("l n m", 8)
    s = z3.Solver()
    s.add(n == 0, z3.If(n == 0, z3.BitVecVal(0, 8), floormod(lv, n + m)) != floormod(lv, n + m))
    assert s.check() == z3.sat


def test_floor_ops_differ_from_truncating_ops_for_negative_operands() -> None:
    x, y = z3.BitVecs("x y", 8)
    s = z3.Solver()
    s.add(x < 0, y >= 1, floordiv(x, y) != x / y)
    assert s.check() == z3.sat


def _ev(opcode: Opcode, a: int, b: int) -> int:
    return int(eval_op(opcode, {}, [np.int8(a), np.int8(b)], I8))


def test_division_rules_hold_exhaustively_over_i8_with_ir_semantics() -> None:
    values = range(-128, 128)
    for x, y in itertools.product(values, values):
        if x >= 0 and y >= 0:  # floordiv-nonneg, floormod-nonneg, the unsigned emitter
            assert _ev(Opcode.FLOORDIV, x, y) == _ev(Opcode.DIV, x, y)
            assert _ev(Opcode.FLOORMOD, x, y) == _ev(Opcode.REM, x, y)
            s = 1 if y == 0 else y
            assert _ev(Opcode.DIV, x, y) == (0 if y == 0 else int(np.uint8(x) // np.uint8(s)))
            assert _ev(Opcode.REM, x, y) == (0 if y == 0 else int(np.uint8(x) % np.uint8(s)))
        for q, r in ((Opcode.FLOORDIV, Opcode.FLOORMOD), (Opcode.DIV, Opcode.REM)):  # divmod-pair
            paired = _ev(Opcode.SUB, x, _ev(Opcode.MUL, _ev(q, x, y), y))
            assert _ev(r, x, y) == (0 if y == 0 else paired)
        # zero-divisor-select: a modulus y * x with y == 0 is 0 whatever x, and mod 0 is 0
        if y == 0:
            assert _ev(Opcode.FLOORMOD, x, _ev(Opcode.MUL, y, x)) == 0
            assert _ev(Opcode.REM, x, _ev(Opcode.MUL, y, x)) == 0
        if y != 0:  # recombine, floor and truncating pairs
            f = _ev(
                Opcode.ADD,
                _ev(Opcode.MUL, _ev(Opcode.FLOORDIV, x, y), y),
                _ev(Opcode.FLOORMOD, x, y),
            )
            t = _ev(Opcode.ADD, _ev(Opcode.MUL, _ev(Opcode.DIV, x, y), y), _ev(Opcode.REM, x, y))
            assert f == x and t == x
    for k in range(7):  # floordiv-pow2, floormod-pow2
        for x in values:
            assert _ev(Opcode.FLOORDIV, x, 2**k) == _ev(Opcode.SHR, x, k)
            assert _ev(Opcode.FLOORMOD, x, 2**k) == _ev(Opcode.AND, x, 2**k - 1)


def test_multiple_rules_hold_exhaustively_over_small_range() -> None:
    for q, n, j in itertools.product(range(-11, 12), range(1, 12), range(12)):
        if j < n:  # div-of-multiple, mod-of-multiple (no wrap: tiny values)
            assert (q * n + j) // n == q and (q * n + j) % n == j


H = "func @f(index %i.0: i64, index %j.1: i64) -> (i64) {\n^entry.0:\n"


def test_divmod_removes_to_index_from_index_round_trip_over_shape() -> None:
    src = (
        H
        + """\
  %n = const 7 : i64
  %m = const 3 : i64
  %nm = mul %n, %m : i64
  %l = mul %i.0, %nm : i64
  %l2 = add %l, %j.1 : i64
  %a = floordiv %l2, %nm : i64
  %r = floormod %l2, %nm : i64
  %b = floordiv %r, %m : i64
  %c = floormod %r, %m : i64
  %t1 = mul %a, %n : i64
  %t2 = add %t1, %b : i64
  %t3 = mul %t2, %m : i64
  %t4 = add %t3, %c : i64
  return %t4
}
"""
    )
    out = run_text("fold,divmod,fold,cse,dce", src)
    filecheck(out, "CHECK-NOT: floordiv\nCHECK-NOT: floormod\nCHECK-NOT: div\nCHECK: return\n")


def test_divmod_recombines_symbolic_extent_with_zero_guard() -> None:
    src = (
        'func @f(index %i.0: i64, capture "a" %a.1: array<f64,1>) -> (i64) {\n^entry.0:\n'
        "  %n = shape %a.1 {axis = 0} : i64\n  %q = floordiv %i.0, %n : i64\n"
        "  %r = floormod %i.0, %n : i64\n  %t = mul %q, %n : i64\n  %u = add %t, %r : i64\n"
        "  return %u\n}\n"
    )
    out = run_text("divmod,dce", src)
    filecheck(out, "CHECK: eq\nCHECK: select\nCHECK-NOT: floordiv\nCHECK: return\n")


def test_divmod_removes_negative_index_wrap_for_nonnegative_index() -> None:
    src = (
        'func @f(index %i.0: i64, capture "a" %a.1: array<f64,1>) -> (f64) {\n^entry.0:\n'
        "  %z = const 0 : i64\n  %n = shape %a.1 {axis = 0} : i64\n  %c = lt %i.0, %z : bool\n"
        "  %w = add %i.0, %n : i64\n  %k = select %c, %w, %i.0 : i64\n"
        "  %x = load %a.1, %k : f64\n  return %x\n}\n"
    )
    out = run_text("divmod,fold,dce", src)
    filecheck(out, "CHECK-NOT: select\nCHECK: load %a.1, %i.0\n")


def test_divmod_keeps_floor_division_of_possibly_negative_value() -> None:
    src = (
        H
        + "  %z = const 3 : i64\n  %n = sub %i.0, %j.1 : i64\n"
        + "  %d = floordiv %n, %z : i64\n  return %d\n}\n"
    )
    filecheck(run_text("divmod", src), "CHECK: floordiv\n")


def test_divmod_makes_division_of_index_by_positive_constant_truncating() -> None:
    src = H + "  %z = const 3 : i64\n  %d = floordiv %i.0, %z : i64\n  return %d\n}\n"
    filecheck(run_text("divmod", src), "CHECK-NOT: floordiv\nCHECK: div %i.0\n")


def test_divmod_uses_branch_narrowing_for_loop_counter() -> None:
    src = (
        H
        + """\
  %z = const 0 : i64
  br ^loop.1(%z)
^loop.1(%k: i64):
  %n = const 10 : i64
  %c = lt %k, %n : bool
  condbr %c, ^body.2, ^done.3
^body.2:
  %five = const 5 : i64
  %r = floormod %k, %five : i64
  %one = const 1 : i64
  %k2 = add %k, %one : i64
  br ^loop.1(%k2)
^done.3:
  return %k
}
"""
    )
    filecheck(run_text("divmod", src), "CHECK: rem %k\n")
