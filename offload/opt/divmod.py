"""divMod and index simplification (pass ``divmod``; the paper's §4.3).

Rules are data (``RULES``), each with its algebra; they use integer range facts
(``offload.analysis.ranges``) at the op's block. ``tests/opt/test_divmod_rules.py`` checks
every rule's algebra with z3 over 64-bit vectors under the rule's preconditions.
Turning a linear index into a multi-index and back (Repa's ``fromIndex . toIndex``)
is removed by ``recombine`` applied repeatedly, however many dimensions (its zero-divisor
guard is dropped again by ``zero-divisor-select`` when the next level's modulus is a
multiple of the divisor). Divisions of operands proven ``>= 0`` become ``div``/``rem``
marked ``{nonneg = true}``, which the emitters divide unsigned. Once nothing else applies,
``LATE_RULES`` turn a ``%`` whose quotient is computed too into ``x - (x // n) * n``
(Haskell's ``divMod``: one division; ``cse`` shares the quotient).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from offload.analysis.range_transfer import transfer
from offload.analysis.ranges import type_range
from offload.ir.core import Function, Op, Value
from offload.ir.ops import COMPARE, Opcode
from offload.ir.types import BOOL, ScalarType
from offload.opt.base import FunctionPass
from offload.opt.poly import Expander, Poly, divide_monomial, poly_range, single_monomial
from offload.opt.rewrite import FactRewriter, Rewriter, Rule
from offload.opt.util import op_is_int as _int
from offload.opt.util import op_type as _t

_MOD_OF = {Opcode.FLOORMOD: Opcode.FLOORDIV, Opcode.REM: Opcode.DIV}


def _decided_compare(op: Op, rw: Rewriter) -> Value | None:
    # a < b -> const when the ranges of a and b decide it (so select(i < 0, i + s, i) -> i
    # for i >= 0, Python's negative-index wrap).
    assert isinstance(rw, FactRewriter)
    a, b = op.operands
    if not all(isinstance(x.type, ScalarType) and not x.type.is_float for x in (a, b)):
        return None
    r = transfer(op, [rw.range(a), rw.range(b)], _t(op))
    return rw.make_const(bool(r.lo), _t(op)) if r.const is not None else None


def _decided_select(op: Op, rw: Rewriter) -> Value | None:
    # select(c, a, b) -> a when c is always true, b when always false.
    assert isinstance(rw, FactRewriter)
    r = rw.range(op.operands[0])
    return None if r.const is None else op.operands[1 if r.const else 2]


def _pow2(op: Op, rw: Rewriter) -> int | None:
    c = rw.const(op.operands[1])
    t = _t(op)
    limit = t.bits - 1 if t.is_signed else t.bits
    if isinstance(c, int) and c > 0 and c & (c - 1) == 0 and c.bit_length() - 1 < limit:
        return c.bit_length() - 1
    return None


def _floordiv_pow2(op: Op, rw: Rewriter) -> Value | None:
    # x // 2**k -> x >> k  (every x: an arithmetic shift rounds toward -inf, like //)
    k = _pow2(op, rw) if _int(op) else None
    return (
        None
        if k is None
        else rw.emit(Opcode.SHR, [op.operands[0], rw.make_const(k, _t(op))], _t(op))
    )


def _floormod_pow2(op: Op, rw: Rewriter) -> Value | None:
    # x % 2**k -> x & (2**k - 1)  (every x: Python's % by a positive modulus is the low bits)
    k = _pow2(op, rw) if _int(op) else None
    mask = (1 << k) - 1 if k is not None else 0
    return (
        None
        if k is None
        else rw.emit(Opcode.AND, [op.operands[0], rw.make_const(mask, _t(op))], _t(op))
    )


NONNEG = "nonneg"
"""Attribute of a ``DIV``/``REM`` whose operands are proven ``>= 0`` (a fact, not a semantic
change): the emitters may divide unsigned."""


def _nonneg_operands(op: Op, rw: Rewriter) -> bool:
    assert isinstance(rw, FactRewriter)
    return _int(op) and all(rw.range(v).lo >= 0 for v in op.operands)


def _truncating(op: Op, rw: Rewriter, opcode: Opcode) -> Value | None:
    if not _nonneg_operands(op, rw):
        return None
    return rw.emit(opcode, list(op.operands), _t(op), {NONNEG: True})


def _floordiv_to_div(op: Op, rw: Rewriter) -> Value | None:
    # x // y -> div(x, y)  when x >= 0 and y >= 0 (floor and truncation agree; both give 0
    # for y == 0)
    return _truncating(op, rw, Opcode.DIV)


def _floormod_to_rem(op: Op, rw: Rewriter) -> Value | None:
    # x % y -> rem(x, y)  when x >= 0 and y >= 0
    return _truncating(op, rw, Opcode.REM)


def _mark_nonneg(op: Op, rw: Rewriter) -> Value | None:
    # div(x, y) -> div(x, y) {nonneg}  when x >= 0 and y >= 0. Marking follows the range
    # facts, which only grow along dominance, so equal ops get equal marks (and CSE keys).
    return None if op.attrs.get(NONNEG) else _truncating(op, rw, op.opcode)


def _multiple_of(rw: FactRewriter, q: Value, n: Value, t: ScalarType, depth: int = 0) -> bool:
    """Whether ``q == n * P`` in the ring of ``t`` for some ``P``: ``n`` is a factor of a
    product tree of ``q``, or ``n``'s monomial divides every term of ``q``'s polynomial."""
    if q is n:
        return True
    d = rw.def_of(q, Opcode.MUL)
    factors = d.operands if d is not None and depth < 8 else []
    if any(_multiple_of(rw, f, n, t, depth + 1) for f in factors):
        return True
    if depth:
        return False
    ex = rw.expander(t)
    nm = single_monomial(ex.expand(n))
    if nm is None or nm[1] == 0:
        return False
    return all(
        divide_monomial(m, nm[0]) is not None and c % nm[1] == 0 for m, c in ex.expand(q).items()
    )


def _zero_divisor_select(op: Op, rw: Rewriter) -> Value | None:
    # select(n == 0, 0, l % q) -> l % q  when q == n * P: n == 0 makes q == 0 and l % 0 == 0
    assert isinstance(rw, FactRewriter)
    c, zero, v = op.operands
    test, mod = rw.def_of(c, Opcode.EQ), rw.def_of(v)
    t = _t(op)
    if test is None or mod is None or mod.opcode not in _MOD_OF or not t.is_int:
        return None
    if not rw.is_const(zero, 0):
        return None
    a, b = test.operands
    n = a if rw.is_const(b, 0) else b if rw.is_const(a, 0) else None
    if n is None or n.type != t or not _multiple_of(rw, mod.operands[1], n, t):
        return None
    return v


def _clamped_wrap(op: Op, rw: Rewriter) -> Value | None:
    # select(i < 0, i + n, i) -> i  when i = min(a, n - 1), a >= 0 and n >= 0 (Python's
    # negative-index wrap of the clamp idiom min(max(x, 0), n - 1)): i < 0 makes i = n - 1
    # with n = 0, where i + n == i.
    assert isinstance(rw, FactRewriter)
    c, wrapped, i = op.operands
    test, add, clamp = rw.def_of(c, Opcode.LT), rw.def_of(wrapped, Opcode.ADD), rw.def_of(i)
    if test is None or add is None or clamp is None or clamp.opcode is not Opcode.MIN:
        return None
    if test.operands[0] is not i or not rw.is_const(test.operands[1], 0) or not _int(op):
        return None
    n = _other(add.operands, i)
    if n is None or rw.range(n).lo < 0:
        return None
    for a, b in (clamp.operands, clamp.operands[::-1]):
        minus = rw.def_of(b, Opcode.ADD)
        if minus is None or rw.range(a).lo < 0:
            continue
        one = _other(minus.operands, n)
        if one is not None and rw.is_const(one, -1):
            return i
    return None


def _other(pair: Sequence[Value], v: Value) -> Value | None:
    """The operand of a two-operand op that is not ``v`` (``None`` if neither is)."""
    a, b = pair
    return b if a is v else a if b is v else None


def _divmod_pair(op: Op, rw: Rewriter) -> Value | None:
    # x % n -> x - (x // n) * n  when x // n is computed too (Haskell's divMod: one division);
    # select(n == 0, 0, ...) keeps x % 0 == 0 where n may be 0. Also rem with div.
    assert isinstance(rw, FactRewriter)
    t = _t(op)
    x, n = op.operands
    if not t.is_int or rw.const(n) is not None:
        return None  # division by a constant is strength-reduced downstream anyway
    kinds = [_MOD_OF[op.opcode]]
    nonneg = _nonneg_operands(op, rw)
    if nonneg:  # floor and truncation agree: either quotient will do
        kinds.append(Opcode.DIV if kinds[0] is Opcode.FLOORDIV else Opcode.FLOORDIV)
    for kind in kinds:
        q, found = rw.find(kind, x, n)
        if not found:
            continue
        if q is None:  # computed only later: compute it here, CSE drops the later copy
            attrs = {NONNEG: True} if nonneg and kind is Opcode.DIV else None
            q = rw.emit(kind, [x, n], t, attrs)
        diff = rw.emit(Opcode.SUB, [x, rw.emit(Opcode.MUL, [q, n], t)], t)
        if rw.range(n).lo > 0 or rw.range(n).hi < 0:
            return diff
        zero = rw.make_const(0, t)
        is_zero = rw.emit(Opcode.EQ, [n, zero], BOOL)
        return rw.emit(Opcode.SELECT, [is_zero, zero, diff], t)
    return None


def _split_multiple(op: Op, rw: FactRewriter) -> tuple[Poly, Poly] | None:
    """``x = Q*n + j`` with ``0 <= j < n`` and no wrap, for ``x // n`` or ``x % n``."""
    t = _t(op)
    if not t.is_int:
        return None
    x, n = op.operands
    ex = rw.expander(t)
    nm = single_monomial(ex.expand(n))
    rn = rw.range(n)
    if nm is None or rn.lo < 1 or nm[1] == 0:
        return None
    q: Poly = {}
    j: Poly = {}
    for m, c in ex.expand(x).items():
        rest = divide_monomial(m, nm[0])
        if rest is not None and c % nm[1] == 0 and (rest or m == nm[0] or not m):
            q = ex.add(q, {ex.mono(list(rest)): c // nm[1]})
        else:
            j = ex.add(j, {m: c})
    rj = poly_range(j, rw.range)
    if rj.lo < 0 or rj.hi >= rn.lo:
        return None
    rq = poly_range(q, rw.range)
    total = [a * b for a in (rq.lo, rq.hi) for b in (rn.lo, rn.hi)]
    full = type_range(t)
    if min(total) + rj.lo < full.lo or max(total) + rj.hi > full.hi:
        return None  # Q*n + j might wrap: the identity needs the exact value
    if op.opcode in (Opcode.DIV, Opcode.REM) and rw.range(x).lo < 0:
        return None
    return q, j


def _div_of_multiple(op: Op, rw: Rewriter) -> Value | None:
    # (Q*n + j) // n -> Q  when 0 <= j < n and Q*n + j does not wrap
    assert isinstance(rw, FactRewriter)
    split = _split_multiple(op, rw)
    return None if split is None else rw.build(split[0], _t(op))


def _mod_of_multiple(op: Op, rw: Rewriter) -> Value | None:
    # (Q*n + j) % n -> j  when 0 <= j < n and Q*n + j does not wrap
    assert isinstance(rw, FactRewriter)
    split = _split_multiple(op, rw)
    return None if split is None else rw.build(split[1], _t(op))


def _pow2_const(rw: Rewriter, v: Value, minus_one: bool) -> int | None:
    c = rw.const(v)
    if not isinstance(c, int) or isinstance(c, bool):
        return None
    c = c + 1 if minus_one else 1 << c if 0 <= c < 62 else 0
    return c if c > 0 and c & (c - 1) == 0 else None


def _division(
    rw: FactRewriter, v: Value, ex: Expander, mod: bool
) -> tuple[str, Value, Poly] | None:
    """``(kind, l, m)`` if ``v`` is ``l // m`` (``mod``: ``l % m``).

    Shifts and masks by powers of two count as the floor forms:
    ``x >> k == x // 2**k`` and ``x & (2**k - 1) == x % 2**k``.
    """
    d = rw.def_of(v)
    if d is None:
        return None
    opcodes = (Opcode.FLOORMOD, Opcode.REM) if mod else (Opcode.FLOORDIV, Opcode.DIV)
    if d.opcode in opcodes:
        kind = "floor" if d.opcode in (Opcode.FLOORDIV, Opcode.FLOORMOD) else "trunc"
        return kind, d.operands[0], ex.expand(d.operands[1])
    bit_op = Opcode.AND if mod else Opcode.SHR
    if d.opcode is bit_op:
        p = _pow2_const(rw, d.operands[1], minus_one=mod)
        if p is not None:
            return "floor", d.operands[0], {(): p}
    return None


def _recombine(op: Op, rw: Rewriter) -> Value | None:
    # k*(l // m)*m + k*(l % m) -> k*l  (m != 0; with m possibly 0: k*select(m == 0, 0, l))
    # Terms of a sum are paired anywhere in it, so fromIndex . toIndex of any rank unwinds.
    assert isinstance(rw, FactRewriter)
    t = _t(op)
    if not t.is_int:
        return None
    ex = rw.expander(t)
    # The op itself is not yet among the rewriter's definitions: expand its operands.
    p = ex.add(ex.expand(op.operands[0]), ex.expand(op.operands[1]))
    for m, c in p.items():
        for atom in dict.fromkeys(m):
            div = _division(rw, atom, ex, mod=False)
            nm = single_monomial(div[2]) if div is not None else None
            if div is None or nm is None or nm[1] == 0 or c % nm[1] != 0:
                continue
            if divide_monomial(m, (atom,)) != nm[0]:
                continue  # the term is not c * (l // m) * m
            kind, l_val, m_poly = div
            k = ex.wrap(c // nm[1])
            for m2, c2 in p.items():
                mod = _division(rw, m2[0], ex, mod=True) if len(m2) == 1 else None
                if mod != (kind, l_val, m_poly) or c2 != k:
                    continue
                whole: Value = l_val
                rm = poly_range(m_poly, rw.range)
                if rm.lo <= 0 <= rm.hi:
                    # l // 0 == l % 0 == 0: keep that case exact.
                    zero = rw.make_const(0, t)
                    m_val = rw.build(m_poly, t)
                    is_zero = rw.emit(Opcode.EQ, [m_val, zero], BOOL)
                    whole = rw.emit(Opcode.SELECT, [is_zero, zero, l_val], t)
                rest_poly = {mm: cc for mm, cc in p.items() if mm not in (m, m2)}
                rest_poly = ex.add(rest_poly, {(whole,): k})
                return rw.build(rest_poly, t)
    return None


Op_ = Opcode
_CMP = "a < b -> true/false when the ranges of a and b decide it"
RULES: tuple[Rule, ...] = (
    *(Rule("decided-compare", c, _CMP, _decided_compare) for c in sorted(COMPARE, key=str)),
    Rule("decided-select", Op_.SELECT, "select(c, a, b) -> a or b, c decided", _decided_select),
    Rule("div-of-multiple", Op_.FLOORDIV, "(Q*n + j) // n -> Q  (0 <= j < n)", _div_of_multiple),
    Rule("div-of-multiple", Op_.DIV, "div(Q*n + j, n) -> Q  (0 <= j < n)", _div_of_multiple),
    Rule("mod-of-multiple", Op_.FLOORMOD, "(Q*n + j) % n -> j  (0 <= j < n)", _mod_of_multiple),
    Rule("mod-of-multiple", Op_.REM, "rem(Q*n + j, n) -> j  (0 <= j < n)", _mod_of_multiple),
    Rule("floordiv-pow2", Op_.FLOORDIV, "x // 2**k -> x >> k  (all x)", _floordiv_pow2),
    Rule("floormod-pow2", Op_.FLOORMOD, "x % 2**k -> x & (2**k - 1)  (all x)", _floormod_pow2),
    Rule("floordiv-nonneg", Op_.FLOORDIV, "x // y -> div(x, y) (x >= 0, y >= 0)", _floordiv_to_div),
    Rule("floormod-nonneg", Op_.FLOORMOD, "x % y -> rem(x, y)  (x >= 0, y >= 0)", _floormod_to_rem),
    Rule("nonneg-mark", Op_.DIV, "div(x, y) -> div(x, y) {nonneg}  (x, y >= 0)", _mark_nonneg),
    Rule("nonneg-mark", Op_.REM, "rem(x, y) -> rem(x, y) {nonneg}  (x, y >= 0)", _mark_nonneg),
    Rule("recombine", Op_.ADD, "(l // m) * m + l % m -> l  (m != 0)", _recombine),
    Rule(
        "clamped-wrap",
        Op_.SELECT,
        "select(i < 0, i + n, i) -> i  (i = min(a, n - 1), a >= 0, n >= 0)",
        _clamped_wrap,
    ),
    Rule(
        "zero-divisor-select",
        Op_.SELECT,
        "select(n == 0, 0, l % (n*P)) -> l % (n*P)  (also rem)",
        _zero_divisor_select,
    ),
)
"""The index rules, tried in order for each opcode."""

_PAIR = "x % n -> x - (x // n) * n, select(n == 0, 0, ..) if n may be 0 (x // n computed)"
LATE_RULES: tuple[Rule, ...] = (
    Rule("divmod-pair", Op_.FLOORMOD, _PAIR, _divmod_pair),
    Rule("divmod-pair", Op_.REM, _PAIR.replace("%", "rem").replace("//", "div"), _divmod_pair),
)
"""Rules applied once ``RULES`` are done: a ``%`` rewritten over its quotient no longer
matches ``recombine`` (which removes both divisions), so it must not come first."""


@dataclass(frozen=True)
class DivModSimplification(FunctionPass):
    """Simplify integer division, modulo and index round trips using range facts."""

    name = "divmod"

    def rewrite(self, fn: Function) -> Function:
        _rewrite(fn, RULES, rounds=4)
        if _rewrite(fn, RULES + LATE_RULES, rounds=1):
            _rewrite(fn, RULES, rounds=4)
        return fn


def _rewrite(fn: Function, rules: Sequence[Rule], rounds: int) -> bool:
    """Apply ``rules`` until nothing changes (at most ``rounds`` walks); whether any did."""
    changed = False
    for _ in range(rounds):
        if not FactRewriter(fn, rules).run():
            break
        changed = True
    return changed
