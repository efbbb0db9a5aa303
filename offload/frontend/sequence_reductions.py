"""The builtins ``sum(seq)``, ``max(seq)`` and ``min(seq)`` over a 1-D view, array
expression, local array or tuple: Python's loops in order, each element of its own type
(``offload.frontend.reductions`` has NumPy's reductions, which these share loops with).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from offload.diagnostics import TypeMismatch
from offload.frontend.promote import binary_result
from offload.frontend.reductions import Reductions
from offload.frontend.values import Scalar, TupleVal, Val
from offload.ir.core import Value
from offload.ir.ops import Opcode
from offload.ir.types import I64


@dataclass(frozen=True)
class SequenceReductions(Reductions):
    """Python's ``sum``/``max``/``min`` of a sequence (``offload.frontend.calls``)."""

    def python_sum(self, args: list[Val], node: ast.Call) -> Val:
        """The builtin ``sum(x, start=0)``: Python adds in order, from ``start``, with the
        elements' own arithmetic (``sum`` of a float32 view stays float32, of an int8 view
        wraps in int8 as NumPy scalars do)."""
        start = (
            self.core.scalar(args[1], node.args[1], "sum()'s start")
            if len(args) == 2
            else self.core.const(0, (I64, True))
        )
        if isinstance(args[0], TupleVal):
            acc = start
            for item in args[0].items:
                acc = self.arith.binop("add", acc, self.core.scalar(item, node.args[0]), node)
            return acc
        x = self._operand(args[0], node.args[0], "sum", weak=True)
        self.core.at(node)
        lengths = self.views.lengths(x)
        if len(lengths) != 1:
            raise self.core.error(
                TypeMismatch,
                "sum() of a view of more than one dimension adds rows (arrays)",
                node,
                hint="use np.sum(...) for the sum of every element",
            )
        key = binary_result("add", (start.type, start.weak), self.views.key(x))
        if key is None:
            raise self.core.error(TypeMismatch, "sum() of values that cannot be added", node)
        t, weak = key

        def add(k: Scalar, accs: list[Value]) -> list[Value]:
            acc = Scalar(accs[0], weak)
            r = self.arith.binop("add", acc, self.views.element(x, [k]), node)
            return [self.core.convert(r, t).value]

        first = self.core.convert(start, t).value
        return Scalar(self.counted(lengths[0], [first], add, hint="pysum")[0], weak)

    # -- the other reductions --------------------------------------------------------------

    def python_extreme(self, name: str, arg: Val, node: ast.Call) -> Scalar:
        """The builtin ``max(x)``/``min(x)`` of a 1-D view, expression or local array:
        Python's loop, ``if item > best: best = item`` from the first element (so a NaN
        first stays, a later NaN never replaces), each element of its own type. Empty, it
        is undefined (Python raises ``ValueError``), as ``np.max`` is."""
        x = self._operand(arg, node.args[0], name, weak=True)
        self.core.at(node)
        lengths = self.views.lengths(x)
        if len(lengths) != 1:
            raise self.core.error(
                TypeMismatch,
                f"{name}() of a view of more than one dimension compares rows (arrays)",
                node,
                hint=f"use np.{name}(...) for the {name}imum of every element",
            )
        weak = self.views.key(x)[1]
        b = self.core.b
        first = self.views.element(x, [self.views.i64(0)]).value
        opcode = Opcode.GT if name == "max" else Opcode.LT

        def pick(pos: tuple[Scalar, ...], accs: list[Value]) -> list[Value]:
            e = self.views.element(x, pos).value
            return [b.select(b.binary(opcode, e, accs[0]), e, accs[0])]

        return Scalar(self.each(lengths, [first], pick)[0], weak)
