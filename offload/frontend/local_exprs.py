"""NumPy arithmetic on whole local arrays (issue 17 item 3: the 3-vectors of a ray tracer):
``origin - center``, ``2.0 * v``, ``np.sqrt(v)``, ``m @ v``, ``v > 0``, and ``v += w``.

An expression over a local array is an ``Elementwise`` like one over views
(``offload/frontend/views.py``), marked ``reads_local``. Unlike a view's, its operands may
be written later (``v[0] = 1.0``), so it is not left to be read where it is used: every
expression value passes through ``LocalExprs.settle`` (``LoweringCore.expr``), which stores
it into a new local array at once, as NumPy computes it. A reduction written around it
(``np.dot(u, v)``, ``np.sum(v * w)``) reads the arrays where it is written. ``v op= w`` is
in place (every name bound to ``v`` sees it), under NumPy's ``same_kind`` casting rule.

A list is a NumPy array of its elements' type for NumPy's functions and for an operator
whose other side is a NumPy array; ``+`` and ``*`` between lists stay Python's. Lengths:
a local array's is a constant, and it is the expression's; a view of a run-time length
in the same expression is read past its own end where it is shorter (an out-of-bounds read
that ``bounds_check`` reports), as views of different lengths are (``views.py``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.diagnostics import TypeMismatch
from offload.frontend.arith import Arith
from offload.frontend.core import LoweringCore
from offload.frontend.local_arrays import LocalArrays
from offload.frontend.names import Names
from offload.frontend.optables import BINOPS
from offload.frontend.reductions import Reductions
from offload.frontend.values import Elementwise, LocalArray, Scalar, Val
from offload.frontend.views import Views
from offload.ir.types import LocalType

UNROLLED_ELEMENTS = 16
"""An array expression of at most this many elements is stored element by element, a
larger one by a loop (``LocalExprs.settle``)."""


@dataclass(frozen=True)
class LocalExprs:
    """Array expressions over local arrays (stateless: one per use is fine)."""

    core: LoweringCore
    arith: Arith
    names: Names

    @property
    def arrays(self) -> LocalArrays:
        return LocalArrays(self.core, self.arith, self.names)

    def settle(self, val: Val, node: ast.AST) -> Val:
        """``val`` computed now where it is an expression over a local array
        (``Elementwise.reads_local``: ``origin - center``, ``np.sqrt(v)``, ``m @ v``): into
        a new local array of its shape and element type, as NumPy computes it at once, so
        that a later write to an operand does not show through. Other values are
        returned as they are."""
        if not (isinstance(val, Elementwise) and val.reads_local):
            return val
        shape: list[int] = []
        for n in val.lengths:
            if not isinstance(n.const, int):
                raise self.core.unsupported(
                    node,
                    "an array expression of a local array and a view whose length is known "
                    "only at run time",
                    "give the view constant bounds (a[i, 0:3]), or loop over the elements",
                )
            shape.append(n.const)
        if len(shape) > 2:
            raise self.core.unsupported(node, f"a local array of {len(shape)} dimensions",
                                        "local arrays have 1 or 2 dimensions")  # fmt: skip
        self.core.at(node)
        arr = self.arrays.new(
            LocalType(val.key[0], tuple(shape)), False, "an array expression", node
        )
        self._store_each(arr, val, node)
        return arr

    def augment_whole(self, arr: LocalArray, node: ast.AugAssign) -> None:
        """``v op= w`` for a local NumPy array ``v``: in place, as NumPy's ufunc with
        ``out=v`` (every name bound to ``v`` sees it), computed in the promoted type and
        cast back under NumPy's ``same_kind`` rule (``int_array += 0.5`` is NumPy's
        UFuncTypeError). ``w`` was computed before (``settle``), so no element of ``v``
        is read after it was written."""
        op = BINOPS.get(type(node.op))
        if arr.weak or op is None:
            what = f"'{_AUG_SYMBOL.get(type(node.op), 'op=')}' on a " + (
                "list" if arr.weak else "local array"
            )
            raise self.core.unsupported(node, what, "write the elements: v[k] += w[k]")
        rhs = self.core.expr(node.value)
        self.core.at(node)
        expr = Views(self.core, self.arith).binop(op, arr, rhs, node)
        t, elem = expr.key[0], arr.type.elem
        op_symbol = _AUG_SYMBOL[type(node.op)][:-1]
        if not np.can_cast(t.dtype, elem.dtype, "same_kind"):
            raise self.core.error(
                TypeMismatch,
                f"cannot cast the result of '{op}' from {t.dtype} to the array's "
                f"{elem.dtype} in place (NumPy's same_kind rule)",
                node,
                hint=f"make the array {t.dtype} (dtype=...), or bind a new array: "
                f"v = v {op_symbol} w",
            )
        if tuple(n.const for n in expr.lengths) != arr.type.shape:
            raise self.core.error(
                TypeMismatch,
                f"cannot update a local array of shape {arr.type.shape} in place with a "
                "value of another shape",
                node,
            )
        self._store_each(arr, expr, node)

    def _store_each(self, arr: LocalArray, val: Elementwise, node: ast.AST) -> None:
        """``arr[pos] = val[pos]`` for every position of ``arr``'s shape."""
        views = Views(self.core, self.arith)
        shape = arr.type.shape
        b = self.core.b

        def store(pos: tuple[Scalar, ...]) -> None:
            x = self.arrays.converted(views.element(val, pos), arr.type.elem, node)
            self.core.at(node)
            b.local_store(arr.value, [p.value for p in pos], x)

        if arr.type.size <= UNROLLED_ELEMENTS:
            for flat in range(arr.type.size):
                index = (flat,) if len(shape) == 1 else (flat // shape[1], flat % shape[1])
                store(tuple(views.i64(k) for k in index))
            return

        def body(pos: tuple[Scalar, ...], accs: list[Any]) -> list[Any]:
            store(pos)
            return []

        Reductions(self.core, self.arith).each(val.lengths, [], body)


_AUG_SYMBOL: dict[type[ast.operator], str] = {
    ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/=", ast.FloorDiv: "//=",
    ast.Mod: "%=", ast.Pow: "**=", ast.MatMult: "@=", ast.LShift: "<<=", ast.RShift: ">>=",
    ast.BitAnd: "&=", ast.BitOr: "|=", ast.BitXor: "^=",
}  # fmt: skip
