"""Integer expressions as polynomials over wrapping arithmetic, for index simplification.

Addition and multiplication modulo ``2**bits`` form a commutative ring, so an expression
of ``ADD``/``SUB``/``MUL``/``NEG``/``SHL``-by-constant over atoms can be expanded into a sum
of ``coeff * atom * atom ...`` terms, regrouped, and rebuilt without changing its value.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from offload.analysis.ranges import Range
from offload.ir.core import Op, Value
from offload.ir.ops import Opcode
from offload.ir.semantics import wrap_int
from offload.ir.types import ScalarType

Monomial = tuple[Value, ...]
"""Atoms multiplied together, in a canonical order (``()`` is the constant term)."""
Poly = dict[Monomial, int]
"""Monomial -> coefficient (wrapped to the type); zero coefficients are dropped."""

MAX_TERMS = 16


class Expander:
    """Expands values of one integer type into ``Poly``s, looking through defining ops."""

    def __init__(
        self,
        t: ScalarType,
        def_of: Callable[[Value], Op | None],
        order: Callable[[Value], int],
    ) -> None:
        self.t = t
        self.def_of = def_of
        self.order = order

    def wrap(self, c: int) -> int:
        return wrap_int(c, self.t.bits, self.t.is_signed)

    def atom(self, v: Value) -> Poly:
        return {(v,): 1}

    def mono(self, atoms: list[Value]) -> Monomial:
        return tuple(sorted(atoms, key=self.order))

    def add(self, a: Poly, b: Poly, sign: int = 1) -> Poly:
        out = dict(a)
        for m, c in b.items():
            out[m] = self.wrap(out.get(m, 0) + sign * c)
            if out[m] == 0:
                del out[m]
        return out

    def mul(self, a: Poly, b: Poly) -> Poly | None:
        if len(a) * len(b) > MAX_TERMS:
            return None
        out: Poly = {}
        for ma, ca in a.items():
            for mb, cb in b.items():
                m = self.mono([*ma, *mb])
                out[m] = self.wrap(out.get(m, 0) + ca * cb)
                if out[m] == 0:
                    del out[m]
        return out

    def expand(self, v: Value, depth: int = 0) -> Poly:
        """``v`` as a polynomial (an atom itself where it cannot look further)."""
        op = self.def_of(v)
        if op is None or depth > 8 or op.result.type != self.t:
            return self.atom(v)
        x = op.operands
        if op.opcode is Opcode.CONST:
            c = self.wrap(int(op.attrs["value"]))
            return {(): c} if c else {}
        if op.opcode in (Opcode.ADD, Opcode.SUB):
            sign = 1 if op.opcode is Opcode.ADD else -1
            out = self.add(self.expand(x[0], depth + 1), self.expand(x[1], depth + 1), sign)
        elif op.opcode is Opcode.NEG:
            out = self.add({}, self.expand(x[0], depth + 1), -1)
        elif op.opcode is Opcode.MUL:
            prod = self.mul(self.expand(x[0], depth + 1), self.expand(x[1], depth + 1))
            if prod is None:
                return self.atom(v)
            out = prod
        else:
            return self.atom(v)
        return out if len(out) <= MAX_TERMS else self.atom(v)


def single_monomial(p: Poly) -> tuple[Monomial, int] | None:
    """``(monomial, coeff)`` if ``p`` has exactly one term."""
    if len(p) != 1:
        return None
    ((m, c),) = p.items()
    return m, c


def divide_monomial(m: Monomial, by: Monomial) -> Monomial | None:
    """``m / by`` as a monomial if ``by``'s atoms are a sub-multiset of ``m``'s."""
    need = Counter(by)
    have = Counter(m)
    if any(have[a] < n for a, n in need.items()):
        return None
    rest = have - need
    out: list[Value] = []
    for a in m:  # m is sorted, so the quotient stays sorted
        if rest[a] > 0:
            out.append(a)
            rest[a] -= 1
    return tuple(out)


def poly_range(p: Poly, atom_range: Callable[[Value], Range]) -> Range:
    """The range of ``p``'s value over the integers (no wrapping) given its atoms' ranges."""
    lo = hi = 0
    for m, c in p.items():
        r = Range(c, c)
        for a in m:
            ar = atom_range(a)
            vals = [x * y for x in (r.lo, r.hi) for y in (ar.lo, ar.hi)]
            r = Range(min(vals), max(vals))
        lo += r.lo
        hi += r.hi
    return Range(lo, hi)
