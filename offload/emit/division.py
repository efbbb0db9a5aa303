"""Integer ``//``, ``%`` and the truncating ``DIV``/``REM`` as Python statements with the
IR's exact semantics under numba typing (CPU and GPU).

The IR gives 0 for a zero divisor and wraps ``INT_MIN // -1``; the machine traps on both.
A divisor only known at run time is made safe first and the IR's answer for those two
cases is chosen with a select.

A **constant** divisor (the common case: ``x // 7``, ``i % 3``) is emitted without any
branch or select, in unsigned 64-bit arithmetic: numba lowers a signed ``//`` to an
overflow test and a sign fix-up in branches, and every ternary in the kernel source is a
branch in numba's IR, so a chain of N dependent divisions gave numba and LLVM a CFG with
3N diamonds on one path and compile time that grew much faster than N (issue 19 item 5:
3.7 s at N=24, 78 s at N=30). The branch-free forms (``a`` of signed type ``T``, computed
in ``uint64`` where every op wraps; ``s`` is all ones when ``a < 0``, else 0; ``~a`` is
``a ^ s`` when ``a < 0``)::

    a // c  (c > 0)  ==  ((a ^ s) // c) ^ s                      # floor(~a / c) = -(a // c) - 1
    a % c   (c > 0)  ==  (((a ^ s) % c) ^ s) + (c & s)           # c - 1 - (~a % c) when a < 0
    any c != 0:      t = trunc(a / c) = ((|a| // |c|) ^ m) - m   # m: all ones iff signs differ
                     rem = a - t * c;  floor = t - (rem != 0 and m);  mod = rem + (c if that)

each checked exhaustively over int8 and at the int64 edges in ``tests/emit/test_divmod_emit.py``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

import numpy as np

from offload.emit.template import assign, const, ctor, expr, name
from offload.ir.core import Function, Op, Value
from offload.ir.ops import Opcode
from offload.ir.types import ScalarType, scalar_by_name

U64 = scalar_by_name("u64")
I64 = scalar_by_name("i64")
_FLOOR = (Opcode.FLOORDIV, Opcode.FLOORMOD)
_DIVISIONS = (Opcode.FLOORDIV, Opcode.FLOORMOD, Opcode.DIV, Opcode.REM)
_QUOTIENT = (Opcode.FLOORDIV, Opcode.DIV)


class Temps:
    """Temporary names for one op: ``_t<n>k<j>`` never collide with SSA names."""

    def __init__(self, out: str) -> None:
        self.base = "_t" + "".join(c for c in out.rsplit("_", 1)[-1] if c.isalnum())
        self.n = 0

    def new(self) -> str:
        self.n += 1
        return f"{self.base}k{self.n - 1}"


def constant_values(fn: Function) -> dict[Value, object]:
    """The value of each ``CONST`` op's result in ``fn``."""
    return {op.result: op.attrs["value"] for op in fn.ops() if op.opcode is Opcode.CONST}


def int_constant(constants: Mapping[Value, object], v: Value) -> int | None:
    """``v``'s value if it is an integer constant."""
    c = constants.get(v)
    if isinstance(c, int | np.integer) and not isinstance(c, bool | np.bool_):
        return int(c)
    return None


def divides_under_a_branch(fn: Function) -> bool:
    """Whether ``fn`` divides integers by a divisor known only at run time outside its
    entry block (where the division may run for some elements only).

    Under numba's ``parallel=True``, LLVM's loop vectoriser (numba 0.68, llvmlite 0.50, LLVM 22)
    miscompiles such a division when the divisor is the same for every element: it
    computes the predicated ``udiv``/``urem`` for the vector's first lane only and uses
    ``poison`` for the others, so ``if i: x = a[5 % len(a)]`` reads garbage or segfaults
    (issue 19 item 23; plain numba, no offload: ``tests/cpu/test_parfor_udiv_segfault.py``).
    A backend compiles such a kernel without loop vectorisation. Division by a constant
    is safe: it is a multiply by then."""
    constants = constant_values(fn)
    for block in fn.blocks[1:]:
        for op in block.ops:
            if op.opcode in _DIVISIONS and op_is_int_division(op, constants):
                return True
    return False


def op_is_int_division(op: Op, constants: Mapping[Value, object]) -> bool:
    """An integer division whose divisor is not a constant."""
    t = op.result.type
    return (
        isinstance(t, ScalarType) and t.is_int and int_constant(constants, op.operands[1]) is None
    )


def _u(v: int) -> ast.expr:
    """The uint64 constant with the bits of ``v`` (taken modulo 2**64)."""
    return const(v % 2**64, U64)


def constant_division(
    code: Opcode, a: ast.expr, c: int, t: ScalarType, *, out: str, tmp: Temps
) -> list[ast.stmt]:
    """``a op c`` for an integer constant ``c`` of type ``t``: no branch, no select."""
    T, U = ctor(t), ctor(U64)
    if c == 0:
        return [assign(out, const(0, t))]
    if not t.is_signed:
        sym = "//" if code in _QUOTIENT else "%"
        return [assign(out, expr(f"T(a {sym} c)", T=T, a=a, c=const(c, t)))]
    s = tmp.new()
    stmts: list[ast.stmt] = [assign(s, expr("U(0) - U(a < z)", U=U, a=a, z=const(0, t)))]
    sv, ua = name(s), expr("U(a)", U=U, a=a)
    if c > 0 and code in _FLOOR:
        x = expr("ua ^ s", ua=ua, s=sv)  # a, or ~a = -a - 1 >= 0 when a < 0
        if code is Opcode.FLOORDIV:
            val = expr("T((x // c) ^ s)", T=T, x=x, c=_u(c), s=sv)
        else:
            val = expr("T(((x % c) ^ s) + (c & s))", T=T, x=x, c=_u(c), s=sv)
        return [*stmts, assign(out, val)]
    # |a| // |c|, negated when the signs differ: the truncated quotient; then the remainder
    m, q, r = tmp.new(), tmp.new(), tmp.new()
    differ = sv if c > 0 else expr("s ^ ones", s=sv, ones=_u(-1))
    mag = expr("(ua ^ s) - s", ua=ua, s=sv)
    stmts += [
        assign(m, differ),
        assign(q, expr("((g // d) ^ m) - m", g=mag, d=_u(abs(c)), m=name(m))),
        assign(r, expr("ua - q * c", ua=ua, q=name(q), c=_u(c))),
    ]
    if code is Opcode.DIV:
        return [*stmts, assign(out, expr("T(q)", T=T, q=name(q)))]
    if code is Opcode.REM:
        return [*stmts, assign(out, expr("T(r)", T=T, r=name(r)))]
    fix = expr("U(r != z) & m", U=U, r=name(r), z=_u(0), m=name(m))  # 0 or 1
    if code is Opcode.FLOORDIV:
        return [*stmts, assign(out, expr("T(q - f)", T=T, q=name(q), f=fix))]
    fm = expr("T(r + (c & (z - f)))", T=T, r=name(r), c=_u(c), z=_u(0), f=fix)
    return [*stmts, assign(out, fm)]


def int_division(
    code: Opcode, a: ast.expr, b: ast.expr, t: ScalarType, *, out: str, tmp: Temps
) -> list[ast.stmt]:
    """``a op b`` for a divisor known only at run time."""
    zero, one = const(0, t), const(1, t)
    # The IR gives 0 for a zero divisor and wraps INT_MIN // -1; the machine traps on both,
    # so divide by a safe divisor and pick the IR's answer for those two with selects.
    s = tmp.new()
    if t.is_signed:
        m1 = const(-1, t)
        bad = expr("(b == z) | (b == m)", b=b, z=zero, m=m1)
        stmts: list[ast.stmt] = [assign(s, expr("o if bad else b", o=one, bad=bad, b=b))]
        edge = expr("z if b == z else n", z=zero, b=b, n=negate(a, t))
    else:
        bad = expr("b == z", b=b, z=zero)
        stmts = [assign(s, expr("o if bad else b", o=one, bad=bad, b=b))]
        edge = zero
    sv, T = name(s), ctor(t)
    floor_like = code in _FLOOR or not t.is_signed
    if floor_like:
        is_div = code in _QUOTIENT
        res = expr(f"e if bad else T(a {'//' if is_div else '%'} s)", e=edge if is_div else zero,
                   bad=bad, T=T, a=a, s=sv)  # fmt: skip
        stmts.append(assign(out, res))
        return stmts
    # Truncating from floor: when the floor remainder is non-zero and the operand signs
    # differ, the truncated quotient is one more and the remainder one divisor less.
    m = tmp.new()
    stmts.append(assign(m, expr("T(a % s)", T=ctor(t), a=a, s=sv)))
    fix = expr("(r != z) & ((a < z) != (s < z))", r=name(m), z=zero, a=a, s=sv)
    if code is Opcode.DIV:
        val = expr("T(a // s + o) if fix else T(a // s)", T=ctor(t), a=a, s=sv, o=one, fix=fix)
        stmts.append(assign(out, expr("e if bad else v", e=edge, bad=bad, v=val)))
    else:
        val = expr("T(r - s) if fix else r", T=ctor(t), r=name(m), s=sv, fix=fix)
        stmts.append(assign(out, expr("z if bad else v", z=zero, bad=bad, v=val)))
    return stmts


def nonneg_division(
    code: Opcode, a: ast.expr, b: ast.expr, t: ScalarType, *, out: str, tmp: Temps
) -> list[ast.stmt]:
    """``DIV``/``REM`` marked ``nonneg`` (the optimiser proved both operands ``>= 0``): an
    unsigned division of the same width, which NVVM emits as ``div.u64``/``rem.u64`` (or
    narrower) with no sign fix-up. A zero divisor still gives the IR's 0."""
    zero, one = const(0, t), const(1, t)
    u = scalar_by_name(f"u{t.bits}")
    s = tmp.new()
    U = ctor(u)
    stmts: list[ast.stmt] = [assign(s, expr("o if b == z else b", o=one, b=b, z=zero))]
    res = expr(f"z if b == z else T(U(a) {'//' if code is Opcode.DIV else '%'} U(s))",
               z=zero, b=b, T=ctor(t), U=U, a=a, s=name(s))  # fmt: skip
    stmts.append(assign(out, res))
    return stmts


def nonneg_constant_division(
    code: Opcode, a: ast.expr, c: int, t: ScalarType, *, out: str
) -> list[ast.stmt]:
    """``nonneg_division`` by a constant: no zero test (a zero divisor gives 0 statically)."""
    if c == 0:
        return [assign(out, const(0, t))]
    U = ctor(scalar_by_name(f"u{t.bits}"))
    sym = "//" if code is Opcode.DIV else "%"
    return [assign(out, expr(f"T(U(a) {sym} U(c))", T=ctor(t), U=U, a=a, c=const(c, t)))]


def negate(a: ast.expr, t: ScalarType) -> ast.expr:
    """``-a`` wrapped to ``t`` (``-INT64_MIN`` is ``INT64_MIN``): numba computes int64
    arithmetic with LLVM's ``nsw`` flag, so an int64 negation goes through uint64."""
    if t.is_signed and t.bits == 64:
        return expr("T(np.uint64(0) - np.uint64(a))", T=ctor(t), a=a)
    return ast.Call(ctor(t), [expr("-a", a=a)], [])
