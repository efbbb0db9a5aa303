"""Lowering of expressions: names, constants, operators, subscripts, attributes.

Comparisons, ``and``/``or`` and conditional expressions are in ``conditions.py``; calls
are in ``calls.py``; statements and loops in ``stmt.py``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from offload.diagnostics import (
    AllocationNotAllowed,
    TypeMismatch,
    UnresolvedCall,
)
from offload.frontend.captures import capture_ir_type, is_array
from offload.frontend.conditions import ConditionLowerer
from offload.frontend.intrinsics import MODULE_CONSTANTS, lookup_intrinsic
from offload.frontend.optables import (
    BINOPS,
    NONNEG_KEEPING,
    OPCODES,
    PY_UNARY,
    SYMBOL,
)
from offload.frontend.promote import (
    BINARY_OPERATORS,
    binary_result,
    describe_key,
    unary_result,
)
from offload.frontend.source import MISSING
from offload.frontend.values import (
    ArrayRef,
    PyObj,
    Scalar,
    Step,
    TupleVal,
    Unbound,
    Val,
    describe,
)
from offload.ir.core import Capture
from offload.ir.ops import Opcode
from offload.ir.types import BOOL, F64, I64, ArrayType, ScalarType

_ALLOCATING = (
    ast.List, ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
    ast.JoinedStr,
)  # fmt: skip


class ExprLowerer(ConditionLowerer):
    """Expression handlers: ``expr(node)`` dispatches on the node class (deny by default)."""

    def expr(self, node: ast.expr) -> Val:
        handler = getattr(self, "expr_" + type(node).__name__, None)
        if handler is None:
            if isinstance(node, _ALLOCATING):
                raise self.error(
                    AllocationNotAllowed,
                    "element functions cannot build lists, dicts, sets or strings",
                    node,
                    hint="use scalars and fixed-size tuples",
                )
            raise self.unsupported(node)
        result: Val = handler(node)
        return result

    # -- leaves ------------------------------------------------------------------------

    def expr_Constant(self, node: ast.Constant) -> Val:
        v = node.value
        self.at(node)
        if isinstance(v, bool):
            return self.const(v, (BOOL, True))
        if isinstance(v, int):
            if not -(2**63) <= v < 2**63:
                raise self.error(TypeMismatch, f"integer constant {v} does not fit int64", node)
            return self.const(v, (I64, True))
        if isinstance(v, float):
            return self.const(v, (F64, True))
        if isinstance(v, str | bytes):
            raise self.error(AllocationNotAllowed, "strings are not allowed", node)
        raise self.unsupported(node, f"the constant {v!r}")

    def expr_Name(self, node: ast.Name) -> Val:
        return self.resolve_name(node.id, node)

    def expr_Tuple(self, node: ast.Tuple) -> Val:
        return TupleVal(tuple(self.expr(e) for e in node.elts))

    def resolve_name(self, name: str, node: ast.AST) -> Val:
        ctx = self.ctx
        if name in ctx.env:
            val = ctx.env[name]
            if isinstance(val, Unbound):
                raise self.error(
                    TypeMismatch,
                    f"'{name}' cannot be used here: {val.reason}",
                    node,
                    hint=f"assign '{name}' one kind of value before the branches or loop",
                )
            return val
        if name in ctx.locals:
            raise self.error(
                TypeMismatch,
                f"local variable '{name}' is used before it is assigned",
                node,
            )
        memo = ctx.resolved.get(name)
        if memo is not None:
            return memo
        fn = ctx.src.fn
        obj = ctx.src.lookup(name)
        if obj is MISSING:
            raise self.error(UnresolvedCall, f"name '{name}' is not defined", node, rule_hint(name))
        path: tuple[Step, ...] | None
        if name in fn.__code__.co_freevars:
            path = (*ctx.base_path, ("closure", fn.__code__.co_freevars.index(name)))
        elif name in fn.__globals__:
            path = (*ctx.base_path, ("global", name))
        else:
            path = None  # a builtin
        val = self.classify(obj, path, name, node)
        ctx.resolved[name] = val
        return val

    def classify(
        self, obj: object, path: tuple[Step, ...] | None, name: str, node: ast.AST | None
    ) -> Val:
        """What a Python object found by name or attribute means in the element function."""
        capturable = type(obj) in (bool, int, float) or is_array(obj)
        capturable = capturable or (
            lookup_intrinsic(obj) is None and capture_ir_type(obj) is not None
        )
        if not capturable or path is None:
            if path is not None:
                key = tuple((k, id(a) if k == "const" else a) for k, a in path)
                self.resolved_objects[key] = (path, obj)
            return PyObj(obj, path, name)
        key = tuple((k, id(a) if k == "const" else a) for k, a in path)
        cached = self.capture_values.get(key)
        if cached is not None:
            return cached
        typed = capture_ir_type(obj)
        if type(obj) is int and not -(2**63) <= obj < 2**63:
            raise self.error(
                TypeMismatch,
                f"captured '{name}' = {obj} does not fit int64",
                node,
                hint="integers in element functions are 64-bit; capture a float instead",
            )
        if typed is None:
            dtype = getattr(obj, "dtype", type(obj).__name__)
            raise self.error(
                TypeMismatch,
                f"captured '{name}' has an unsupported element type ({dtype})",
                node,
                hint="use bool, int8..int64, uint8..uint64, float32 or float64",
            )
        t, weak = typed
        saved = self.b.block, self.b.span
        value = self.b.add_capture(Capture(name, t))
        self.b.block, self.b.span = saved
        val: Val = ArrayRef(value, name) if isinstance(t, ArrayType) else Scalar(value, weak)
        self.capture_values[key] = val
        self.capture_paths.append(path)
        return val

    # -- operators ---------------------------------------------------------------------

    def expr_BinOp(self, node: ast.BinOp) -> Val:
        op = BINOPS.get(type(node.op))
        if op is None:
            raise self.unsupported(node, "the '@' operator")
        left = self.expr(node.left)
        right = self.expr(node.right)
        if op == "add" and isinstance(left, TupleVal) and isinstance(right, TupleVal):
            return TupleVal(left.items + right.items)
        a = self.scalar(left, node.left)
        b = self.scalar(right, node.right)
        self.at(node)
        return self.binop(op, a, b, node)

    def binop(self, op: str, a: Scalar, b: Scalar, node: ast.AST | None) -> Scalar:
        """``a <op> b`` with NEP 50 typing (``op``: a key of ``BINARY_OPERATORS``)."""
        ka, kb = (a.type, a.weak), (b.type, b.weak)
        key = binary_result(op, ka, kb)
        if key is None:
            raise self.error(
                TypeMismatch,
                f"unsupported operand types for {SYMBOL[op]}: "
                f"'{describe_key(ka)}' and '{describe_key(kb)}'",
                node,
                hint="use ^ for the difference of bools" if op == "sub" else "",
            )
        if op == "pow" and a.weak and b.weak and isinstance(b.const, int) and b.const < 0:
            key = (F64, True)  # Python: int ** negative int is a float
        elif (
            op == "pow" and a.weak and b.weak and key[0].is_int and b.const is None
        ) and not b.nonneg:
            # CPython's result type depends on the exponent's sign at run time.
            raise self.error(
                TypeMismatch,
                "int ** int with an exponent that may be negative (CPython would give "
                "a float for a negative one)",
                node,
                hint="write float(x) ** y, or use an exponent known to be >= 0 "
                "(an index or a range counter)",
            )
        rt, weak = key
        if op == "truediv" or not rt.is_bool:
            opnd_t = rt
        else:
            opnd_t = BOOL
        folded = self._fold(op, a, b, key, node)
        if folded is not None:
            return folded
        x = self.convert(a, opnd_t).value
        y = self.convert(b, opnd_t).value
        opcode = OPCODES[op]
        if rt.is_bool and op == "add":
            opcode = Opcode.OR  # NumPy: bool + bool is logical or
        elif rt.is_bool and op == "mul":
            opcode = Opcode.AND
        nonneg = rt.is_int and op in NONNEG_KEEPING and a.nonneg and b.nonneg
        return Scalar(self.b.binary(opcode, x, y), weak, None, nonneg)

    def _fold(
        self, op: str, a: Scalar, b: Scalar, key: tuple[ScalarType, bool], node: ast.AST | None
    ) -> Scalar | None:
        """Fold an operation on two weak (Python) constants the way CPython computes it."""
        if not (a.weak and b.weak and a.const is not None and b.const is not None):
            return None
        try:
            r: Any = BINARY_OPERATORS[op](a.const, b.const)
        except (ArithmeticError, ValueError):
            return None
        if type(r) is not type(0 if key[0].is_int else False if key[0].is_bool else 0.0):
            return None
        if isinstance(r, int) and not isinstance(r, bool) and not -(2**63) <= r < 2**63:
            # CPython would compute this exactly; an int64 kernel would silently wrap it.
            raise self.error(
                TypeMismatch,
                f"the constant {a.const} {SYMBOL[op]} {b.const} = {r} does not fit int64",
                node,
                hint="integers in element functions are 64-bit; use a float constant",
            )
        return self.const(r, key)

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Val:
        val = self.scalar(self.expr(node.operand), node.operand)
        self.at(node)
        if isinstance(node.op, ast.Not):
            t = self.truth(val, node.operand)
            self.at(node)
            if t.const is not None:
                return self.const(not t.const, (BOOL, True))
            return Scalar(self.b.unary(Opcode.NOT, t.value), True)
        name = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert"}[type(node.op)]
        return self.unary(name, val, node)

    def unary(self, name: str, val: Scalar, node: ast.AST | None) -> Scalar:
        """``-x``, ``+x``, ``~x`` or ``abs(x)`` with Python/NumPy typing."""
        key = unary_result(name, (val.type, val.weak))
        if key is None:
            raise self.error(
                TypeMismatch,
                f"bad operand type for unary {name}: '{describe_key((val.type, val.weak))}'",
                node,
            )
        rt, weak = key
        if val.const is not None and weak and rt is not BOOL:
            fn: Callable[[Any], Any] = PY_UNARY.get(name, abs)
            return self.const(fn(int(val.const) if rt.is_int else val.const), key)
        x = self.convert(val, rt, weak)
        if name == "pos":
            return x
        if name == "invert":
            opcode = Opcode.NOT if rt.is_bool else Opcode.INVERT
            return Scalar(self.b.unary(opcode, x.value), weak)
        if name == "abs":
            return Scalar(self.b.unary(Opcode.ABS, x.value), weak, None, False)
        return Scalar(self.b.unary(Opcode.NEG, x.value), weak)

    # -- subscripts and attributes -------------------------------------------------------

    def expr_Subscript(self, node: ast.Subscript) -> Val:
        base = self.expr(node.value)
        index_nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for ix in index_nodes:
            if isinstance(ix, ast.Slice):
                raise self.unsupported(ix, "slicing", "read single elements: a[i, j]")
        if isinstance(base, TupleVal):
            return self._tuple_item(base, node)
        if not isinstance(base, ArrayRef):
            raise self.error(TypeMismatch, f"a {describe(base)} cannot be indexed", node.value)
        ndim = base.type.ndim
        if len(index_nodes) != ndim:
            raise self.error(
                TypeMismatch,
                f"'{base.name}' has {ndim} dimension{'s' if ndim != 1 else ''} but "
                f"{len(index_nodes)} ind{'ices' if len(index_nodes) != 1 else 'ex'} "
                "were given",
                node,
                hint="element functions read single elements: give one integer per dimension",
            )
        indices = [self.expr(ix) for ix in index_nodes]
        return self.load(base, indices, index_nodes, node)

    def load(
        self, base: ArrayRef, indices: list[Val], index_nodes: list[ast.expr], node: ast.AST
    ) -> Scalar:
        """``base[indices]`` with Python's negative-index wrap made explicit."""
        values = []
        for axis, (ix, ixnode) in enumerate(zip(indices, index_nodes, strict=True)):
            s = self.scalar(ix, ixnode, "an array index")
            if not s.type.is_int:
                raise self.error(
                    TypeMismatch,
                    f"array indices must be integers, not {describe(s)}",
                    ixnode,
                    hint="convert with int(...)" if s.type.is_float else "",
                )
            self.at(ixnode)
            values.append(self.wrap_index(base, axis, self.convert(s, I64)).value)
        self.at(node)
        return Scalar(self.b.load(base.value, values), False)

    def wrap_index(self, base: ArrayRef, axis: int, s: Scalar) -> Scalar:
        """Python's meaning of a possibly negative index (omitted when trivially >= 0)."""
        if s.nonneg or (isinstance(s.const, int) and s.const >= 0):
            return s
        shape = self.b.shape(base.value, axis)
        if isinstance(s.const, int):  # a negative constant: no test needed
            return Scalar(self.b.binary(Opcode.ADD, s.value, shape), False)
        zero = self.b.const(0, I64)
        neg = self.b.binary(Opcode.LT, s.value, zero)
        wrapped = self.b.binary(Opcode.ADD, s.value, shape)
        return Scalar(self.b.select(neg, wrapped, s.value), False)

    def _tuple_item(self, base: TupleVal, node: ast.Subscript) -> Val:
        ix = self.expr(node.slice)
        if not (isinstance(ix, Scalar) and isinstance(ix.const, int) and ix.weak):
            raise self.error(TypeMismatch, "tuple indices must be integer constants", node.slice)
        k = int(ix.const)
        n = len(base.items)
        if not -n <= k < n:
            raise self.error(TypeMismatch, f"tuple index {k} out of range (size {n})", node)
        return base.items[k]

    def expr_Attribute(self, node: ast.Attribute) -> Val:
        base = self.expr(node.value)
        attr = node.attr
        self.at(node)
        if isinstance(base, ArrayRef):
            return self._array_attr(base, attr, node)
        if isinstance(base, PyObj):
            const = MODULE_CONSTANTS.get((id(base.obj), attr))
            if const is not None:
                return self.const(const, (F64, True))
            try:
                obj = getattr(base.obj, attr)
            except AttributeError:
                raise self.error(
                    UnresolvedCall, f"'{base.name}' has no attribute '{attr}'", node
                ) from None
            path = None if base.path is None else (*base.path, ("attr", attr))
            return self.classify(obj, path, f"{base.name}.{attr}", node)
        raise self.error(TypeMismatch, f"a {describe(base)} has no attribute '{attr}'", node)

    def _array_attr(self, base: ArrayRef, attr: str, node: ast.AST) -> Val:
        ndim = base.type.ndim
        if attr == "ndim":
            return self.const(ndim, (I64, True))
        if attr == "shape":
            return TupleVal(tuple(self.shape(base, k) for k in range(ndim)))
        if attr == "size":
            size = self.const(1, (I64, True))
            for k in range(ndim):
                size = self.binop("mul", size, self.shape(base, k), node)
            return size
        raise self.unsupported(node, f"the array attribute '.{attr}'", "use .shape, .ndim, .size")

    def shape(self, base: ArrayRef, axis: int) -> Scalar:
        return Scalar(self.b.shape(base.value, axis), True, None, True)


def rule_hint(name: str) -> str:
    return f"define '{name}' at module level or in an enclosing function before compiling"
