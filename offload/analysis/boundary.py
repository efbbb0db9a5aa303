"""Boundary tests: conditions that change only a few times along one index axis.

A stencil written as an element function tests where it is: ``if z == 0 or z == nz - 1:``
(a zero halo), ``if r >= 2 and r < n - 2:`` (``ol.stencil``'s interior). Along the axis
such a condition takes one value over long runs of neighbouring indices; a kernel that
computes several neighbouring elements in one control flow (``offload.ptx.passes.walk``)
may then follow one element's path for all of them and check that they agree.

The rule, from the IR alone: along ``axis``, a value is

* *uniform* if it does not depend on ``axis`` (``offload.analysis.uniform``);
* *monotone* if it is the axis's index parameter, or a monotone value cast to another
  width, negated, plus or minus a uniform value, times a uniform value, divided (floor or
  truncating) by a uniform value or shifted by a uniform amount, or the least or greatest
  of a monotone value and a uniform one: along the axis it never changes direction;
* a *boundary test* if it is a bool that is uniform; a comparison of a monotone value with
  a uniform one (it changes at most twice along the axis); ``not``, ``and``, ``or``,
  ``xor`` or ``select`` of boundary tests; or a block argument (a short-circuit ``or``'s
  join) whose every incoming value is a boundary test.

A boundary test made of ``k`` comparisons changes at most ``2k`` times along the axis, so
all but a few groups of neighbouring elements agree on it. Periodic tests (``z % 2 == 0``)
and tests of loaded values are not boundary tests.
"""

from __future__ import annotations

from offload.analysis.uniform import Deps
from offload.ir.core import Block, Branch, Function, Jump, Op, Value
from offload.ir.ops import COMPARE, Opcode
from offload.ir.types import ScalarType

_SHIFTS = frozenset({Opcode.ADD, Opcode.SUB, Opcode.MUL, Opcode.MIN, Opcode.MAX})
"""Monotone in a monotone operand when the other is uniform (``SUB``: either side)."""
_DIVISIONS = frozenset({Opcode.FLOORDIV, Opcode.DIV, Opcode.SHR, Opcode.SHL})
"""Monotone in a monotone dividend (shifted value) when the divisor (shift) is uniform."""
_LOGIC = frozenset({Opcode.NOT, Opcode.AND, Opcode.OR, Opcode.XOR, Opcode.SELECT})


class BoundaryTests:
    """Answers "is this value a boundary test along ``axis``" for one function (memoised)."""

    def __init__(self, fn: Function, axis: int, deps: dict[Value, Deps]) -> None:
        self.fn = fn
        self.axis = axis
        self.deps = deps
        self.defs: dict[Value, Op] = {op.result: op for op in fn.ops()}
        self.incoming: dict[Value, list[Value]] = _incoming(fn)
        self.index = {
            v for k, v in enumerate(fn.entry.args[: fn.n_index]) if fn.index_axis(k) == axis
        }
        self._tests: dict[Value, bool] = {}
        self._monotone: dict[Value, bool] = {}

    def uniform(self, v: Value) -> bool:
        return self.axis not in self.deps.get(v, frozenset())

    def monotone(self, v: Value) -> bool:
        """Whether ``v`` never changes direction along the axis (see the module doc)."""
        if v in self.index:
            return True
        if v in self._monotone:
            return self._monotone[v]
        self._monotone[v] = False  # a cycle (a loop-carried value) is not monotone
        op = self.defs.get(v)
        ok = False
        if op is not None:
            xs = op.operands
            if op.opcode in (Opcode.CAST, Opcode.NEG) and len(xs) == 1:
                t = op.result.type
                ok = isinstance(t, ScalarType) and t.dtype.kind in "iu" and self.monotone(xs[0])
            elif op.opcode in _SHIFTS and len(xs) == 2:
                ok = any(self.monotone(a) and self.uniform(b) for a, b in (xs, xs[::-1]))
            elif op.opcode in _DIVISIONS and len(xs) == 2:
                ok = self.monotone(xs[0]) and self.uniform(xs[1])
        self._monotone[v] = ok
        return ok

    def test(self, v: Value) -> bool:
        """Whether bool ``v`` is a boundary test along the axis (see the module doc)."""
        if self.uniform(v):
            return True
        if v in self._tests:
            return self._tests[v]
        self._tests[v] = False  # a cycle (a loop-carried flag) is not a boundary test
        op = self.defs.get(v)
        if op is None:
            ins = self.incoming.get(v)
            ok = bool(ins) and all(self.test(x) for x in ins or ())
        elif op.opcode in COMPARE and len(op.operands) == 2:
            a, b = op.operands
            ok = (self.monotone(a) and self.uniform(b)) or (self.monotone(b) and self.uniform(a))
        elif op.opcode in _LOGIC:
            ok = all(self.test(x) for x in op.operands)
        else:
            ok = False
        self._tests[v] = ok
        return ok


def _incoming(fn: Function) -> dict[Value, list[Value]]:
    """Each block argument's incoming values, over every edge into its block."""
    out: dict[Value, list[Value]] = {}
    for block in fn.blocks:
        for target, args in _edges(block):
            for param, arg in zip(target.args, args, strict=True):
                out.setdefault(param, []).append(arg)
    return out


def _edges(block: Block) -> list[tuple[Block, list[Value]]]:
    t = block.terminator
    if isinstance(t, Branch):
        return [(t.then_target, t.then_args), (t.else_target, t.else_args)]
    if isinstance(t, Jump):
        return [(t.target, t.args)]
    return []
