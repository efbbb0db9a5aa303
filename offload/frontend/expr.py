"""Lowering of expressions: names, constants, operators, subscripts, attributes.

Comparisons, ``and``/``or`` and conditional expressions are in ``conditions.py``; calls
in ``calls.py``; operator typing in ``arith.py``; name resolution in ``names.py``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from offload.diagnostics import TypeMismatch, UnresolvedCall
from offload.frontend import typeinfo
from offload.frontend.arith import Arith
from offload.frontend.core import ExprHandler, LoweringCore
from offload.frontend.intrinsics import MODULE_CONSTANTS
from offload.frontend.local_arrays import LocalArrays
from offload.frontend.names import Names
from offload.frontend.optables import BINOPS
from offload.frontend.promote import join
from offload.frontend.reductions import METHODS, Reductions
from offload.frontend.values import (
    ArrayRef,
    BoundMethod,
    Elementwise,
    LocalArray,
    PyObj,
    Scalar,
    TupleVal,
    Val,
    View,
    describe,
)
from offload.frontend.views import Views
from offload.ir.ops import Opcode
from offload.ir.types import BOOL, F64, I64


@dataclass(frozen=True)
class Exprs:
    """Names, constants, operators, subscripts and attributes (one per lowering)."""

    core: LoweringCore
    arith: Arith
    names: Names

    def handlers(self) -> dict[type[ast.expr], ExprHandler]:
        return {
            ast.Constant: self.constant,
            ast.Name: self.name,
            ast.Tuple: self.tuple_display,
            ast.BinOp: self.binop,
            ast.UnaryOp: self.unaryop,
            ast.Subscript: self.subscript,
            ast.Attribute: self.attribute,
        }

    @property
    def views(self) -> Views:
        """Views and elementwise expressions (views.py)."""
        return Views(self.core, self.arith)

    # -- leaves ------------------------------------------------------------------------

    def constant(self, node: ast.Constant) -> Val:
        v = node.value
        self.core.at(node)
        if isinstance(v, bool):
            return self.core.const(v, (BOOL, True))
        if isinstance(v, int):
            return self.core.const(v, (I64, True))  # beyond int64: see ``core.const``
        if isinstance(v, float):
            return self.core.const(v, (F64, True))
        raise self.core.unsupported(node, f"the constant {v!r}")

    def name(self, node: ast.Name) -> Val:
        return self.names.resolve_name(node.id, node)

    def tuple_display(self, node: ast.Tuple) -> Val:
        return TupleVal(tuple(self.core.expr(e) for e in node.elts))

    # -- operators ---------------------------------------------------------------------

    def binop(self, node: ast.BinOp) -> Val:
        op = BINOPS.get(type(node.op))
        repeated = LocalArrays(self.core, self.arith, self.names).repeat(node)
        if repeated is not None:  # [0.0] * K
            return repeated
        left = self.core.expr(node.left)
        right = self.core.expr(node.right)
        if op is None:  # '@': a dot product of views (reductions.py)
            self.core.at(node)
            return Reductions(self.core, self.arith).matmul(left, right, node)
        if op == "add" and isinstance(left, TupleVal) and isinstance(right, TupleVal):
            return TupleVal(left.items + right.items)
        if any(map(_numpy_array, (left, right))):
            self.core.at(node)
            return self.views.binop(op, left, right, node)
        a = self.core.scalar(left, node.left)
        b = self.core.scalar(right, node.right)
        self.core.at(node)
        return self.arith.binop(op, a, b, node)

    def unaryop(self, node: ast.UnaryOp) -> Val:
        operand = node.operand
        if (
            isinstance(node.op, ast.USub)
            and isinstance(operand, ast.Constant)
            and type(operand.value) is int
            and operand.value == 2**63
        ):
            # -9223372036854775808 is int64's minimum, though its literal alone does not fit.
            self.core.at(node)
            return self.core.const(-(2**63), (I64, True))
        operand_val = self.core.expr(node.operand)
        if _numpy_array(operand_val) and not isinstance(node.op, ast.Not):
            self.core.at(node)
            name = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert"}[type(node.op)]
            if isinstance(operand_val, LocalArray):
                operand_val = self.views.local(operand_val)
            assert isinstance(operand_val, View | Elementwise)
            return self.views.unary(name, operand_val, node)
        val = self.core.scalar(operand_val, node.operand)
        self.core.at(node)
        if isinstance(node.op, ast.Not):
            t = self.core.truth(val, node.operand)
            self.core.at(node)
            if t.const is not None:
                return self.core.const(not t.const, (BOOL, True))
            return Scalar(self.core.b.unary(Opcode.NOT, t.value), True)
        name = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert"}[type(node.op)]
        return self.arith.unary(name, val, node)

    # -- subscripts and attributes -------------------------------------------------------

    def subscript(self, node: ast.Subscript) -> Val:
        base = self.core.expr(node.value)
        index_nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        slices = [ix for ix in index_nodes if isinstance(ix, ast.Slice)]
        if isinstance(base, TupleVal):
            if slices:
                raise self.core.unsupported(slices[0], "slicing a tuple", "index it: t[0]")
            return self._tuple_item(base, node)
        if isinstance(base, LocalArray):
            return LocalArrays(self.core, self.arith, self.names).read(base, index_nodes, node)
        if isinstance(base, ArrayRef) and len(index_nodes) == base.type.ndim and not slices:
            indices = [self.core.expr(ix) for ix in index_nodes]
            return self.load(base, indices, index_nodes, node)
        if isinstance(base, ArrayRef | View | Elementwise):
            # a[i] of a 2-D array, a[i, 2:5], row[j], (u - v)[k]: views.py
            return self.views.subscript(base, index_nodes, node)
        raise self.core.error(TypeMismatch, f"a {describe(base)} cannot be indexed", node.value)

    def load(
        self, base: ArrayRef, indices: list[Val], index_nodes: list[ast.expr], node: ast.AST
    ) -> Scalar:
        """``base[indices]`` with Python's negative-index wrap made explicit."""
        values = []
        for axis, (ix, ixnode) in enumerate(zip(indices, index_nodes, strict=True)):
            s = self.core.scalar(ix, ixnode, "an array index")
            if not s.type.is_int:
                raise self.core.error(
                    TypeMismatch,
                    f"array indices must be integers, not {describe(s)}",
                    ixnode,
                    hint="convert with int(...)" if s.type.is_float else "",
                )
            self.core.at(ixnode)
            values.append(self.wrap_index(base, axis, self.core.convert(s, I64)).value)
        self.core.at(node)
        return Scalar(self.core.b.load(base.value, values), False)

    def wrap_index(self, base: ArrayRef, axis: int, s: Scalar) -> Scalar:
        """Python's meaning of a possibly negative index (omitted when trivially >= 0)."""
        if s.nonneg or (isinstance(s.const, int) and s.const >= 0):
            return s
        shape = self.core.b.shape(base.value, axis)
        if isinstance(s.const, int):  # a negative constant: no test needed
            return Scalar(self.core.b.binary(Opcode.ADD, s.value, shape), False)
        zero = self.core.b.const(0, I64)
        neg = self.core.b.binary(Opcode.LT, s.value, zero)
        wrapped = self.core.b.binary(Opcode.ADD, s.value, shape)
        return Scalar(self.core.b.select(neg, wrapped, s.value), False)

    def _tuple_item(self, base: TupleVal, node: ast.Subscript) -> Val:
        ix = self.core.expr(node.slice)
        if isinstance(ix, Scalar) and ix.const is None and ix.type.is_int:
            return self._tuple_select(base, ix, node)
        if not (isinstance(ix, Scalar) and isinstance(ix.const, int) and ix.weak):
            raise self.core.error(TypeMismatch, "tuple indices must be integers", node.slice)
        k = int(ix.const)
        n = len(base.items)
        if not -n <= k < n:
            raise self.core.error(TypeMismatch, f"tuple index {k} out of range (size {n})", node)
        return base.items[k]

    def attribute(self, node: ast.Attribute) -> Val:
        base = self.core.expr(node.value)
        attr = node.attr
        self.core.at(node)
        if isinstance(base, ArrayRef | View | Elementwise) and attr in (*METHODS, "astype"):
            return BoundMethod(attr, base)  # row.sum(): called in calls.py
        if isinstance(base, Scalar) and attr in CONVERSIONS:
            return BoundMethod(attr, base)  # x[i].item(), x[i].astype(np.float64)
        if isinstance(base, ArrayRef):
            return self._array_attr(base, attr, node)
        if isinstance(base, View | Elementwise):
            return self.views.measure(base, attr, node)
        if isinstance(base, LocalArray):
            return LocalArrays(self.core, self.arith, self.names).attribute(base, attr, node)
        if isinstance(base, PyObj) and typeinfo.is_info(base.obj):
            return typeinfo.attribute(self.core, base, attr, node)
        if isinstance(base, PyObj):
            const = MODULE_CONSTANTS.get((id(base.obj), attr))
            if const is not None:
                return self.core.const(const, (F64, True))
            try:
                obj = getattr(base.obj, attr)
            except AttributeError:
                raise self.core.error(
                    UnresolvedCall, f"'{base.name}' has no attribute '{attr}'", node
                ) from None
            path = None if base.path is None else (*base.path, ("attr", attr))
            return self.names.classify(obj, path, f"{base.name}.{attr}", node)
        raise self.core.error(TypeMismatch, f"a {describe(base)} has no attribute '{attr}'", node)

    def _array_attr(self, base: ArrayRef, attr: str, node: ast.AST) -> Val:
        ndim = base.type.ndim
        if attr == "ndim":
            return self.core.const(ndim, (I64, True))
        if attr == "shape":
            return TupleVal(tuple(self.shape(base, k) for k in range(ndim)))
        if attr == "dtype":  # (fixed when the kernel is compiled: np.finfo(x.dtype))
            return PyObj(base.type.elem.dtype, None, f"{base.name}.dtype")
        if attr == "size":
            size = self.core.const(1, (I64, True))
            for k in range(ndim):
                size = self.arith.binop("mul", size, self.shape(base, k), node)
            return size
        raise self.core.unsupported(
            node, f"the array attribute '.{attr}'", "use .shape, .ndim, .size, .dtype"
        )

    def shape(self, base: ArrayRef, axis: int) -> Scalar:
        return Scalar(self.core.b.shape(base.value, axis), True, None, True)

    def _tuple_select(self, base: TupleVal, ix: Scalar, node: ast.Subscript) -> Scalar:
        """``t[k]`` with ``k`` known at run time, for a tuple of numbers: the items joined
        to one type (as where control flow merges), picked by a chain of selects; a
        negative ``k`` counts from the end. Past either end it is the last item, as an
        out-of-bounds read is undefined (Python raises ``IndexError``)."""
        items = [it for it in base.items if isinstance(it, Scalar)]
        if not items or len(items) != len(base.items):
            raise self.core.error(
                TypeMismatch,
                "a tuple indexed by a value known only at run time must hold numbers",
                node.slice,
                hint="index it with an integer constant",
            )
        key = join(*((it.type, it.weak) for it in items))
        if key is None:
            kinds = ", ".join(describe(it) for it in items)
            raise self.core.error(TypeMismatch, f"tuple items that do not combine: {kinds}", node)
        b = self.core.b
        self.core.at(node)
        k = self.core.convert(ix, I64).value
        n = b.const(len(items), I64)
        k = b.select(b.binary(Opcode.LT, k, b.const(0, I64)), b.binary(Opcode.ADD, k, n), k)
        conv = [self.core.convert(it, key[0], key[1]).value for it in items]
        out = conv[-1]
        for pos in range(len(conv) - 2, -1, -1):
            out = b.select(b.binary(Opcode.EQ, k, b.const(pos, I64)), conv[pos], out)
        return Scalar(out, key[1])


CONVERSIONS = ("item", "astype")
"""A NumPy scalar's conversion methods (``calls.Calls.conversion``)."""


def _numpy_array(v: Val) -> bool:
    """Whether an operator on ``v`` is NumPy's elementwise one: a view, an expression or a
    local NumPy array (a list's ``+`` and ``*`` are Python's: concatenation, repetition)."""
    return isinstance(v, View | Elementwise) or (isinstance(v, LocalArray) and not v.weak)
