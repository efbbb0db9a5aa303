"""Transfer functions of the integer range analysis: the range of an op's result from the
ranges of its operands. Any op that could wrap gives the whole range of its type."""

from __future__ import annotations

from collections.abc import Callable

from offload.analysis.range_domain import INDEX_LIMIT, Range, type_range
from offload.ir.core import Op
from offload.ir.ops import Opcode
from offload.ir.types import ScalarType

Operands = list[Range | None]


def _fit(lo: int, hi: int, t: ScalarType) -> Range:
    full = type_range(t)
    if lo < full.lo or hi > full.hi:
        return full  # the op may wrap: nothing is known
    return Range(lo, hi)


def _corners(f: Callable[[int, int], int], a: Range, b: Range, t: ScalarType) -> Range:
    vals = [f(x, y) for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
    return _fit(min(vals), max(vals), t)


def _floordiv(a: Range, b: Range, t: ScalarType) -> Range:
    if b.lo > 0 or b.hi < 0:
        # floor(x / y) is monotone in each argument while y keeps one sign.
        return _corners(lambda x, y: x // y, a, b, t)
    if a.lo >= 0 and b.lo >= 0:
        return Range(0, a.hi)  # x // 0 == 0
    return type_range(t)


def _floormod(a: Range, b: Range, t: ScalarType) -> Range:
    if b.lo >= 0:
        hi = max(b.hi - 1, 0)
        if a.lo >= 0:
            if a.hi < b.lo:
                return a  # x % y == x for 0 <= x < y
            hi = min(hi, a.hi)
        return Range(0, hi)
    if b.hi < 0:
        return Range(b.lo + 1, 0)
    return type_range(t)


def _rem(a: Range, b: Range, t: ScalarType) -> Range:
    if a.lo >= 0 and b.lo >= 0:
        return _floormod(a, b, t)
    return type_range(t)


def _div(a: Range, b: Range, t: ScalarType) -> Range:
    if a.lo >= 0 and b.lo >= 0:
        return _floordiv(a, b, t)
    return type_range(t)


def _bit_and(a: Range, b: Range, t: ScalarType) -> Range:
    if t.is_bool:
        return Range(a.lo & b.lo, a.hi & b.hi)
    if a.lo >= 0 and b.lo >= 0:
        return Range(0, min(a.hi, b.hi))
    if a.lo >= 0:
        return Range(0, a.hi)
    if b.lo >= 0:
        return Range(0, b.hi)
    return type_range(t)


def _bit_or(a: Range, b: Range, t: ScalarType) -> Range:
    if t.is_bool:
        return Range(a.lo | b.lo, a.hi | b.hi)
    if a.lo >= 0 and b.lo >= 0:
        return _fit(max(a.lo, b.lo), (1 << max(a.hi, b.hi).bit_length()) - 1, t)
    return type_range(t)


def _bit_xor(a: Range, b: Range, t: ScalarType) -> Range:
    if t.is_bool:
        return Range(0, 1)
    if a.lo >= 0 and b.lo >= 0:
        return _fit(0, (1 << max(a.hi, b.hi).bit_length()) - 1, t)
    return type_range(t)


def _shr(a: Range, b: Range, t: ScalarType) -> Range:
    if a.lo >= 0 and b.lo >= 0 and b.hi < t.bits:
        return Range(a.lo >> b.hi, a.hi >> b.lo)
    return type_range(t)


def _shl(a: Range, b: Range, t: ScalarType) -> Range:
    if a.lo >= 0 and b.lo >= 0 and b.hi < t.bits:
        return _fit(a.lo << b.lo, a.hi << b.hi, t)
    return type_range(t)


def _abs(a: Range, t: ScalarType) -> Range:
    if a.lo >= 0:
        return a
    if a.hi <= 0:
        return _fit(-a.hi, -a.lo, t)
    return _fit(0, max(-a.lo, a.hi), t)


def _compare(opcode: Opcode, a: Range, b: Range) -> Range:
    always: bool | None = None
    if opcode is Opcode.LT:
        always = True if a.hi < b.lo else False if a.lo >= b.hi else None
    elif opcode is Opcode.LE:
        always = True if a.hi <= b.lo else False if a.lo > b.hi else None
    elif opcode is Opcode.GT:
        always = True if a.lo > b.hi else False if a.hi <= b.lo else None
    elif opcode is Opcode.GE:
        always = True if a.lo >= b.hi else False if a.hi < b.lo else None
    elif opcode in (Opcode.EQ, Opcode.NE):
        if a.const is not None and a.const == b.const:
            always = opcode is Opcode.EQ
        elif a.intersect(b) is None:
            always = opcode is Opcode.NE
    if always is None:
        return Range(0, 1)
    return Range(int(always), int(always))


_BINARY: dict[Opcode, Callable[[Range, Range, ScalarType], Range]] = {
    Opcode.ADD: lambda a, b, t: _fit(a.lo + b.lo, a.hi + b.hi, t),
    Opcode.SUB: lambda a, b, t: _fit(a.lo - b.hi, a.hi - b.lo, t),
    Opcode.MUL: lambda a, b, t: _corners(lambda x, y: x * y, a, b, t),
    Opcode.MIN: lambda a, b, t: Range(min(a.lo, b.lo), min(a.hi, b.hi)),
    Opcode.MAX: lambda a, b, t: Range(max(a.lo, b.lo), max(a.hi, b.hi)),
    Opcode.FLOORDIV: _floordiv,
    Opcode.FLOORMOD: _floormod,
    Opcode.DIV: _div,
    Opcode.REM: _rem,
    Opcode.AND: _bit_and,
    Opcode.OR: _bit_or,
    Opcode.XOR: _bit_xor,
    Opcode.SHR: _shr,
    Opcode.SHL: _shl,
}


def transfer(op: Op, operands: Operands, t: ScalarType) -> Range:
    """The range of ``op``'s result (of type ``t``) given its operands' ranges (``None``
    for operands that are not integers or bools)."""
    opcode = op.opcode
    if opcode is Opcode.CONST:
        return Range(int(op.attrs["value"]), int(op.attrs["value"]))
    if opcode is Opcode.SHAPE:
        return Range(0, INDEX_LIMIT - 1)
    if opcode in _COMPARES:
        a, b = operands
        return _compare(opcode, a, b) if a is not None and b is not None else Range(0, 1)
    if opcode is Opcode.SELECT:
        c, a, b = operands
        if a is None or b is None:
            return type_range(t)
        if c is not None and c.const is not None:
            return a if c.const else b
        return a.union(b)
    if opcode is Opcode.CAST:
        a = operands[0]
        if a is None:
            return type_range(t)  # from a float: undefined out of range, assume nothing
        if t.is_bool:
            if a.const == 0:
                return Range(0, 0)
            return Range(1, 1) if a.lo > 0 or a.hi < 0 else Range(0, 1)
        full = type_range(t)
        return a if full.lo <= a.lo and a.hi <= full.hi else full
    if opcode is Opcode.NOT and operands[0] is not None:
        a = operands[0]
        return Range(1 - a.hi, 1 - a.lo)
    if opcode is Opcode.NEG and operands[0] is not None:
        a = operands[0]
        return _fit(-a.hi, -a.lo, t)
    if opcode is Opcode.ABS and operands[0] is not None:
        return _abs(operands[0], t)
    fn = _BINARY.get(opcode)
    if fn is not None and len(operands) == 2:
        a, b = operands
        if a is not None and b is not None:
            return fn(a, b, t)
    return type_range(t)


_COMPARES = frozenset({Opcode.LT, Opcode.LE, Opcode.GT, Opcode.GE, Opcode.EQ, Opcode.NE})
