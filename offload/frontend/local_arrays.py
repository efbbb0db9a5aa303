"""Small local arrays (issue 17 item 3): ``np.zeros(K)``, ``np.empty``, ``np.ones``,
``np.full(K, v)``, ``np.zeros((K, M))``, ``np.array([x, y, z])`` (also 2-D), the list
displays ``[a, b, c]`` and ``[v] * K``, with ``dtype=`` where NumPy takes it.

The shape is a compile-time constant — literals, constant expressions, names bound to
constants, and captured Python ints (frozen into the kernel: ``names.frozen_captured_int``)
— of at most ``MAX_LOCAL_ELEMENTS`` elements; anything else is a located
``AllocationNotAllowed``. The array is one ``LOCAL`` op; names bound to it share it (Python
aliasing, helpers included), and reads and writes are ``LOCAL_LOAD``/``LOCAL_STORE`` with
Python's negative indices made explicit. A NumPy array reads as strong scalars of its
dtype; a list as Python numbers of its elements' joined type (a list of Python floats reads
as ``float``). Writes convert to the element type as NumPy's ``a[k] = v`` does.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.diagnostics import AllocationNotAllowed, TypeMismatch, WriteNotAllowed
from offload.frontend.arith import Arith
from offload.frontend.core import LoweringCore
from offload.frontend.names import Names
from offload.frontend.optables import BINOPS
from offload.frontend.promote import join, sample
from offload.frontend.values import LocalArray, PyObj, Scalar, TupleVal, Val, describe
from offload.ir.ops import Opcode
from offload.ir.types import BOOL, F64, I64, LocalType, ScalarType, scalar_of_dtype
from offload.ir.verify_ops import MAX_LOCAL_ELEMENTS

_RULE_HINT = (
    "a local array's shape must be known when the kernel is compiled: a literal, a constant "
    f"expression or a captured int (at most {MAX_LOCAL_ELEMENTS} elements)"
)
_CONST_OPS: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
CONSTRUCTORS = ("zeros", "empty", "ones", "full", "array")

"""The NumPy functions that make a local array (``intrinsics.py`` registers them)."""


@dataclass(frozen=True)
class LocalArrays:
    """Makes, reads and writes local arrays (stateless: one per use is fine)."""

    core: LoweringCore
    arith: Arith
    names: Names

    def handlers(self) -> dict[type[ast.expr], Callable[[Any], Val]]:
        return {ast.List: self.display}

    # -- construction ------------------------------------------------------------------

    def construct(self, kind: str, func: PyObj, node: ast.Call) -> LocalArray:
        """``np.<kind>(...)`` for ``kind`` in ``CONSTRUCTORS``."""
        args, kwargs = list(node.args), {str(k.arg): k.value for k in node.keywords}
        allowed = {"dtype"}
        unknown = sorted(set(kwargs) - allowed)
        if unknown:
            raise self.core.unsupported(
                kwargs[unknown[0]], f"the keyword '{unknown[0]}' of '{func.name}'"
            )
        if kind == "array":
            if len(args) != 1:
                raise self.core.error(TypeMismatch, f"'{func.name}' takes 1 argument here", node)
            dtype = self._dtype(kwargs.get("dtype"), func.name)
            return self._from_display(args[0], dtype, node, func.name)
        want = 2 if kind == "full" else 1
        if not want <= len(args) <= want + 1:
            raise self.core.error(
                TypeMismatch, f"'{func.name}' takes {want} or {want + 1} arguments here", node
            )
        shape = self.shape_of(args[0], func.name)
        if len(args) == want + 1:
            if "dtype" in kwargs:
                raise self.core.error(TypeMismatch, "dtype given twice", node)
            kwargs["dtype"] = args[want]
        dtype = self._dtype(kwargs.get("dtype"), func.name)
        fill: Scalar | None = None
        if kind == "full":
            fill = self.core.scalar(self.core.expr(args[1]), args[1], "the fill value")
            if dtype is None:
                dtype = _array_dtype([fill])
        elem = dtype or F64
        self.core.at(node)
        arr = self.new(LocalType(elem, shape), False, f"np.{kind}", node)
        if kind in ("zeros", "ones"):
            fill = self.core.const(int(kind == "ones"), (I64, True))
        if fill is not None:
            self.core.at(node)
            value = self.converted(fill, elem, node)
            self.core.b.local_fill(arr.value, value)
        return arr

    def display(self, node: ast.List) -> LocalArray:
        """A list display ``[a, b, c]``: a list of its elements' joined type."""
        items = [self.core.scalar(self.core.expr(e), e, "a list element") for e in node.elts]
        if not items:
            raise self.core.error(AllocationNotAllowed, "an empty list cannot be a local array",
                                  node, hint=_RULE_HINT)  # fmt: skip
        key = join(*((s.type, s.weak) for s in items))
        if key is None:
            raise self.core.error(TypeMismatch, "the list's elements do not combine", node)
        self.core.at(node)
        arr = self.new(LocalType(key[0], (len(items),)), key[1], "list", node)
        self._store_all(arr, items, node)
        return arr

    def repeat(self, node: ast.BinOp) -> LocalArray | None:
        """``[v, ...] * K`` or ``K * [v, ...]`` (a list display times a constant count);
        ``None`` if ``node`` is not that."""
        if not isinstance(node.op, ast.Mult):
            return None
        if isinstance(node.left, ast.List):
            display, count = node.left, node.right
        elif isinstance(node.right, ast.List):
            display, count = node.right, node.left
        else:
            return None
        n = self._constant_int(count)
        if n is None:
            raise self.core.error(
                AllocationNotAllowed,
                "a list repeated a number of times that is not a compile-time constant "
                "allocates memory and is not allowed in element functions",
                count,
                hint=_RULE_HINT,
            )
        items = [self.core.scalar(self.core.expr(e), e, "a list element") for e in display.elts]
        key = join(*((s.type, s.weak) for s in items)) if items else None
        if key is None:
            raise self.core.error(TypeMismatch, "the list's elements do not combine", display)
        size = max(n, 0) * len(items)
        self._check_size((size,), node)
        self.core.at(node)
        arr = self.new(LocalType(key[0], (size,)), key[1], "list", node)
        if len(items) == 1:
            self.core.b.local_fill(arr.value, self.converted(items[0], key[0], node))
        else:
            self._store_all(arr, items * n, node)
        return arr

    def _from_display(
        self, arg: ast.expr, dtype: ScalarType | None, node: ast.AST, what: str
    ) -> LocalArray:
        if (
            isinstance(arg, ast.List | ast.Tuple)
            and arg.elts
            and all(isinstance(e, ast.List | ast.Tuple) for e in arg.elts)
        ):
            rows = [list(e.elts) for e in arg.elts]  # type: ignore[attr-defined]
            if len({len(r) for r in rows}) != 1 or not rows[0]:
                raise self.core.error(TypeMismatch, f"'{what}' of rows of different lengths",
                                      arg)  # fmt: skip
            shape: tuple[int, ...] = (len(rows), len(rows[0]))
            nodes = [e for r in rows for e in r]
        elif isinstance(arg, ast.List | ast.Tuple) and arg.elts:
            shape, nodes = (len(arg.elts),), list(arg.elts)
        else:
            raise self.core.unsupported(
                arg,
                f"'{what}' of anything but a list or tuple display",
                "write np.array([x, y, z])",
            )
        self._check_size(shape, node)
        items = [self.core.scalar(self.core.expr(e), e, "an array element") for e in nodes]
        elem = dtype or _array_dtype(items)
        self.core.at(node)
        arr = self.new(LocalType(elem, shape), False, "np.array", node)
        self._store_all(arr, items, node)
        return arr

    def new(self, t: LocalType, weak: bool, origin: str, node: ast.AST) -> LocalArray:
        self._check_size(t.shape, node)
        once = self.core.b.block is self.core.b.function.entry
        return LocalArray(self.core.b.local(t), weak, origin, once)

    def _store_all(self, arr: LocalArray, items: list[Scalar], node: ast.AST) -> None:
        shape = arr.type.shape
        for k, s in enumerate(items):
            index = [k] if len(shape) == 1 else [k // shape[1], k % shape[1]]
            ix = [self.core.b.const(i, I64) for i in index]
            self.core.b.local_store(arr.value, ix, self.converted(s, arr.type.elem, node))

    def converted(self, s: Scalar, elem: ScalarType, node: ast.AST) -> Any:
        """``s`` as the element type, as NumPy's ``a[k] = s`` converts it (float -> int
        truncates; a Python int the type cannot hold is NumPy's OverflowError)."""
        if s.type.is_float and elem.is_int:
            return self.core.b.cast(s.value, elem)
        return self.core.convert(s, elem).value

    # -- compile-time shapes and dtypes -------------------------------------------------

    def shape_of(self, node: ast.expr, what: str) -> tuple[int, ...]:
        """The constant shape ``node`` gives (an int or a tuple of 1 or 2 ints)."""
        parts = node.elts if isinstance(node, ast.Tuple | ast.List) else [node]
        if not 1 <= len(parts) <= 2:
            raise self.core.unsupported(node, f"a local array of {len(parts)} dimensions",
                                        "local arrays have 1 or 2 dimensions")  # fmt: skip
        shape: list[int] = []
        for p in parts:
            n = self._constant_int(p)
            if n is None:
                raise self.core.error(
                    AllocationNotAllowed,
                    f"'{what}' with a size that is not a compile-time constant allocates "
                    "memory and is not allowed in element functions",
                    p,
                    hint=_RULE_HINT,
                )
            shape.append(n)
        self._check_size(tuple(shape), node)
        return tuple(shape)

    def _check_size(self, shape: tuple[int, ...], node: ast.AST) -> None:
        size = 1
        for n in shape:
            size *= n
        if min(shape, default=0) < 1 or size > MAX_LOCAL_ELEMENTS:
            raise self.core.error(
                AllocationNotAllowed,
                f"a local array of shape {shape} is not allowed: local arrays hold 1 to "
                f"{MAX_LOCAL_ELEMENTS} elements",
                node,
                hint="larger arrays belong outside the element function: capture one",
            )

    def _constant_int(self, node: ast.expr) -> int | None:
        """The int ``node`` denotes when the kernel is compiled, or ``None``."""
        if isinstance(node, ast.Constant):
            v = node.value
            return v if type(v) is int else None
        if isinstance(node, ast.Name):
            bound = self.core.ctx.env.get(node.id)
            if isinstance(bound, Scalar) and type(bound.const) is int:
                return bound.const
            if isinstance(bound, Scalar):
                # n = N + 1 (N a captured int): a name assigned once, of a constant value
                single = _single_assignment(self.core.ctx.src.node, node.id)
                return None if single is None else self._constant_int(single)
            if bound is not None:
                return None
            return self.names.frozen_captured_int(node.id)
        if isinstance(node, ast.BinOp) and type(node.op) in _CONST_OPS:
            a, b = self._constant_int(node.left), self._constant_int(node.right)
            if a is None or b is None:
                return None
            try:
                r = _CONST_OPS[type(node.op)](a, b)
            except (ArithmeticError, ValueError):
                return None
            return r if type(r) is int else None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            v = self._constant_int(node.operand)
            return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
        val = self.core.expr(node)
        if isinstance(val, Scalar) and type(val.const) is int and val.weak:
            return val.const
        return None

    def _dtype(self, node: ast.expr | None, what: str) -> ScalarType | None:
        if node is None:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            obj: object = node.value
        else:
            val = self.core.expr(node)
            if not isinstance(val, PyObj):
                raise self.core.error(TypeMismatch, f"dtype must be a type, not a "
                                      f"{describe(val)}", node)  # fmt: skip
            obj = val.obj
        try:
            t = scalar_of_dtype(np.dtype(obj))  # type: ignore[call-overload]
        except TypeError:
            t = None
        if t is None:
            raise self.core.error(
                TypeMismatch,
                f"'{what}' with dtype {obj!r}",
                node,
                hint="use bool, int8..int64, uint8..uint64, float32 or float64",
            )
        return t

    # -- reads and writes --------------------------------------------------------------

    def index(self, arr: LocalArray, index_nodes: list[ast.expr], node: ast.AST) -> list[Any]:
        """The IR indices of ``arr[index_nodes]``, Python's negative indices wrapped."""
        shape = arr.type.shape
        if len(index_nodes) != len(shape):
            raise self.core.error(
                TypeMismatch,
                f"a {describe(arr)} takes {len(shape)} ind{'ices' if len(shape) > 1 else 'ex'}"
                f", {len(index_nodes)} given",
                node,
                hint="index a 2-D local array as t[i, j]",
            )
        out = []
        for ix, n in zip(index_nodes, shape, strict=True):
            if isinstance(ix, ast.Slice):
                raise self.core.unsupported(ix, "slicing a local array", "index single elements")
            s = self.core.scalar(self.core.expr(ix), ix, "an array index")
            if not s.type.is_int:
                raise self.core.error(
                    TypeMismatch, f"array indices must be integers, not {describe(s)}", ix
                )
            self.core.at(ix)
            s = self.core.convert(s, I64)
            if isinstance(s.const, int) and s.const < 0:
                out.append(self.core.b.const(s.const + n, I64))
            elif s.nonneg or (isinstance(s.const, int) and s.const >= 0):
                out.append(s.value)
            else:
                b = self.core.b
                neg = b.binary(Opcode.LT, s.value, b.const(0, I64))
                wrapped = b.binary(Opcode.ADD, s.value, b.const(n, I64))
                out.append(b.select(neg, wrapped, s.value))
        return out

    def read(self, arr: LocalArray, index_nodes: list[ast.expr], node: ast.AST) -> Scalar:
        ix = self.index(arr, index_nodes, node)
        self.core.at(node)
        return Scalar(self.core.b.local_load(arr.value, ix), arr.weak)

    def write(self, target: ast.Subscript, value: Val, node: ast.AST) -> None:
        """``t[k] = value`` (``target`` is the subscript)."""
        arr = self._target_array(target)
        ix = self.index(arr, _index_nodes(target), target)
        s = self.core.scalar(value, node, "the value stored")
        self.core.at(node)
        self.core.b.local_store(arr.value, ix, self.converted(s, arr.type.elem, node))

    def augment(self, node: ast.AugAssign) -> None:
        """``t[k] op= value``: the index evaluated once, as Python does."""
        assert isinstance(node.target, ast.Subscript)
        arr = self._target_array(node.target)
        ix = self.index(arr, _index_nodes(node.target), node.target)
        self.core.at(node)
        current = Scalar(self.core.b.local_load(arr.value, ix), arr.weak)
        rhs = self.core.scalar(self.core.expr(node.value), node.value)
        self.core.at(node)
        new = self.arith.binop(BINOPS[type(node.op)], current, rhs, node)
        self.core.b.local_store(arr.value, ix, self.converted(new, arr.type.elem, node))

    def _target_array(self, target: ast.Subscript) -> LocalArray:
        base = self.core.expr(target.value)
        if not isinstance(base, LocalArray):
            raise self.core.error(
                WriteNotAllowed,
                f"writing into a {describe(base)} is not allowed in element functions",
                target,
                hint="element functions write only their own local arrays (np.zeros(K), "
                "[0.0] * K); captured arrays and views of them are read-only",
            )
        return base

    def check_alias(self, arr: LocalArray, target: ast.Name) -> None:
        """Binding ``arr`` to a second name is allowed only for an array made once per
        element (in the entry block): every target keeps one storage per allocation site
        (a GPU's local array is one per thread), so an array made again in a loop while an
        older one is still named would share it."""
        env = self.core.ctx.env
        aliased = any(v is arr for n, v in env.items() if n != target.id)
        if aliased and not arr.once:
            raise self.core.error(
                AllocationNotAllowed,
                f"a second name for a {describe(arr)} made in a loop or branch is not "
                "allowed: each place that makes a local array has one storage",
                target,
                hint="make the arrays before the loop and copy values between them",
            )

    # -- measures ----------------------------------------------------------------------

    def attribute(self, arr: LocalArray, attr: str, node: ast.AST) -> Val:
        shape = arr.type.shape
        if attr == "shape" and not arr.weak:
            return TupleVal(tuple(self.core.const(n, (I64, True)) for n in shape))
        if attr == "ndim" and not arr.weak:
            return self.core.const(len(shape), (I64, True))
        if attr == "size" and not arr.weak:
            return self.core.const(arr.type.size, (I64, True))
        raise self.core.unsupported(node, f"the attribute '.{attr}' of a {describe(arr)}")

    def length(self, arr: LocalArray) -> Scalar:
        return self.core.const(arr.type.shape[0], (I64, True))


def _single_assignment(fn: ast.AST, name: str) -> ast.expr | None:
    """The value of the one statement binding ``name`` in ``fn`` (``name = value``), or
    ``None`` if it is bound anywhere else (twice, by a loop, an augmented assignment,
    unpacking, a parameter)."""
    values: list[ast.expr] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id == name:
                    values.append(node.value)
                elif any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(t)):
                    return None
        elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For | ast.NamedExpr):
            target = node.target
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)):
                return None
        elif isinstance(node, ast.arguments) and any(
            a.arg == name for a in node.args + node.posonlyargs + node.kwonlyargs
        ):
            return None
    return values[0] if len(values) == 1 else None


def _index_nodes(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


def _array_dtype(items: list[Scalar]) -> ScalarType:
    """The dtype NumPy gives ``np.array([...])`` of these scalars (asked of NumPy itself)."""
    values = [sample(s.type, s.weak) for s in items]
    t = scalar_of_dtype(np.array(values).dtype)
    return t if t is not None else (BOOL if all(s.type.is_bool for s in items) else F64)
