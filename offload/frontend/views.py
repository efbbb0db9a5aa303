"""Read-only views of captured arrays and elementwise expressions over them.

``a[i]``, ``a[i, :]``, ``a[i, 2:5]``, ``a[:, j]``, ``a[::-1]`` are ``View`` values: per axis
of the captured array either a fixed index or an affine map ``start + k * step`` with a
length, computed with Python's slice rules (clipping, negative bounds, negative steps).
Nothing is copied and no IR array op exists: each element read is a ``load`` of the base
array at the mapped index. Views of views compose (the maps multiply out).

``a[i, :] - c[k, :]``, ``2.0 * row``, ``np.sqrt(row)`` are ``Elementwise`` values: a
length per dimension and a function that lowers one element where it is read — indexed,
iterated or reduced (reductions.py) — so no temporary array exists either.

A slice step of zero is an error when it is a constant; one known only at run time gives
an empty view (Python raises a ValueError).

Lengths that differ between the operands of an elementwise expression are an error when
both are known at compile time. Lengths known only at run time: the expression has the
longest operand's length and a shorter view is read at its array's extent past its own end
— an out-of-bounds read, which ``bounds_check`` (and the interpreter) report at the line,
and which is undefined otherwise, like any other (NumPy raises a ValueError).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from offload.diagnostics import TypeMismatch
from offload.frontend.arith import Arith
from offload.frontend.core import LoweringCore
from offload.frontend.promote import TypeKey, binary_result, describe_key, unary_result
from offload.frontend.values import (
    ArrayRef,
    Elementwise,
    LocalArray,
    Scalar,
    TupleVal,
    Val,
    View,
    ViewAxis,
    describe,
)
from offload.ir.ops import Opcode
from offload.ir.types import BOOL, I64

ArrayLike = View | Elementwise
"""The values that have elements: what reductions and loops accept."""


def reads_local(v: Val) -> bool:
    """Whether ``v`` is a local array or an expression that reads one (``Elementwise``)."""
    return isinstance(v, LocalArray) or (isinstance(v, Elementwise) and v.reads_local)


@dataclass(frozen=True)
class SliceSpec:
    """The bounds of one ``lower:upper:step`` (``None`` where omitted)."""

    lower: Scalar | None
    upper: Scalar | None
    step: Scalar | None
    node: ast.Slice


@dataclass(frozen=True)
class Views:
    """Views and elementwise expressions (stateless: one per use is fine)."""

    core: LoweringCore
    arith: Arith

    # -- integer arithmetic on int64 index scalars (folded where constant) ---------------

    def i64(self, value: int) -> Scalar:
        return self.core.const(value, (I64, True))

    def add(self, x: Scalar, y: Scalar) -> Scalar:
        if x.const == 0:
            return y
        if y.const == 0:
            return x
        return self.arith.binop("add", x, y, None)

    def sub(self, x: Scalar, y: Scalar) -> Scalar:
        return x if y.const == 0 else self.arith.binop("sub", x, y, None)

    def mul(self, x: Scalar, y: Scalar) -> Scalar:
        if x.const == 1:
            return y
        if y.const == 1:
            return x
        return self.arith.binop("mul", x, y, None)

    def floordiv(self, x: Scalar, y: Scalar) -> Scalar:
        return x if y.const == 1 else self.arith.binop("floordiv", x, y, None)

    def _minmax(self, opcode: Opcode, x: Scalar, y: Scalar) -> Scalar:
        if isinstance(x.const, int) and isinstance(y.const, int):
            pick = min if opcode is Opcode.MIN else max
            return self.i64(pick(int(x.const), int(y.const)))
        v = self.core.b.binary(opcode, x.value, y.value)
        nonneg = (x.nonneg and y.nonneg) if opcode is Opcode.MIN else (x.nonneg or y.nonneg)
        return Scalar(v, True, None, nonneg)

    def min(self, x: Scalar, y: Scalar) -> Scalar:
        return self._minmax(Opcode.MIN, x, y)

    def max(self, x: Scalar, y: Scalar) -> Scalar:
        return self._minmax(Opcode.MAX, x, y)

    def index_compare(self, opcode: Opcode, x: Scalar, y: Scalar) -> Scalar:
        if isinstance(x.const, int) and isinstance(y.const, int):
            test = {Opcode.LT: int.__lt__, Opcode.GT: int.__gt__}[opcode]
            return self.core.const(test(int(x.const), int(y.const)), (BOOL, True))
        return Scalar(self.core.b.binary(opcode, x.value, y.value), True)

    def is_negative(self, x: Scalar) -> Scalar:
        return self.index_compare(Opcode.LT, x, self.i64(0))

    def select(self, cond: Scalar, x: Scalar, y: Scalar) -> Scalar:
        if cond.const is not None:
            return x if cond.const else y
        if x is y:
            return x
        v = self.core.b.select(cond.value, x.value, y.value)
        return Scalar(v, True, None, x.nonneg and y.nonneg)

    def wrap(self, k: Scalar, length: Scalar) -> Scalar:
        """Python's meaning of a possibly negative index into ``length`` elements."""
        if k.nonneg or (isinstance(k.const, int) and k.const >= 0):
            return k
        if isinstance(k.const, int):
            return self.add(k, length)
        return self.select(self.is_negative(k), self.add(k, length), k)

    # -- views -------------------------------------------------------------------------

    def full(self, base: ArrayRef) -> View:
        """The whole array as a view."""
        zero, one = self.i64(0), self.i64(1)
        axes = tuple(
            ViewAxis(zero, one, Scalar(self.core.b.shape(base.value, k), True, None, True))
            for k in range(base.type.ndim)
        )
        return View(base, axes, base.name)

    def local(self, arr: LocalArray, weak: bool = False) -> Elementwise:
        """The elements of a local array as an expression, read where it is lowered. Its
        ``reads_local`` makes every expression over it computed at once
        (``Elementwise.reads_local``). ``weak``: a Python list's elements as Python numbers
        (the builtin ``sum``); NumPy functions and operators take a list as an array of
        its elements' type (strong)."""
        lengths = tuple(self.i64(n) for n in arr.type.shape)
        b = self.core.b

        def element(pos: tuple[Scalar, ...], g: bool) -> Scalar:
            return Scalar(b.local_load(arr.value, [p.value for p in pos]), weak and arr.weak)

        key = (arr.type.elem, weak and arr.weak)
        return Elementwise(lengths, key, element, True, True)

    def lengths(self, v: ArrayLike) -> tuple[Scalar, ...]:
        return tuple(a.length for a in v.axes) if isinstance(v, View) else v.lengths

    def key(self, v: ArrayLike) -> TypeKey:
        return (v.base.type.elem, False) if isinstance(v, View) else v.key

    def element(
        self, v: ArrayLike, positions: Sequence[Scalar], guard: bool | None = None
    ) -> Scalar:
        """The element at ``positions`` (non-negative; in range unless ``guard``) of a view
        or expression. With ``guard``, a position past a view's length reads at the base
        array's extent instead: out of bounds (see ``Elementwise.element``)."""
        if isinstance(v, Elementwise):
            return v.element(tuple(positions), bool(guard) or not v.uniform)
        indices: list[Scalar] = []
        pos = iter(positions)
        for axis, ix in enumerate(v.index):
            if isinstance(ix, Scalar):
                indices.append(ix)
                continue
            p = next(pos)
            mapped = self.add(ix.start, self.mul(p, ix.step))
            if guard:
                inside = self.index_compare(Opcode.LT, p, ix.length)
                extent = Scalar(self.core.b.shape(v.base.value, axis), True, None, True)
                mapped = self.select(inside, mapped, extent)
            indices.append(mapped)
        return Scalar(self.core.b.load(v.base.value, [s.value for s in indices]), False)

    def item(self, v: ArrayLike, k: Scalar) -> Val:
        """``v[k]`` for an in-range, non-negative ``k``: an element or a view of one
        dimension fewer."""
        lengths = self.lengths(v)
        if len(lengths) == 1:
            return self.element(v, [k])
        if isinstance(v, View):
            index: list[Scalar | ViewAxis] = []
            done = False
            for ix in v.index:
                if isinstance(ix, ViewAxis) and not done:
                    index.append(self.add(ix.start, self.mul(k, ix.step)))
                    done = True
                else:
                    index.append(ix)
            return View(v.base, tuple(index), v.name)
        fn = v.element
        return Elementwise(
            v.lengths[1:], v.key, lambda pos, g: fn((k, *pos), g), v.uniform, v.reads_local
        )

    def measure(self, v: ArrayLike, attr: str, node: ast.AST) -> Val:
        """``v.shape``, ``v.ndim``, ``v.size``."""
        lengths = self.lengths(v)
        if attr == "ndim":
            return self.i64(len(lengths))
        if attr == "shape":
            return TupleVal(lengths)
        if attr == "size":
            size = self.i64(1)
            for n in lengths:
                size = self.mul(size, n)
            return size
        raise self.core.unsupported(
            node, f"the attribute '.{attr}' of a {describe(v)}", "use .shape, .ndim, .size"
        )

    def subscript(
        self, base: ArrayRef | ArrayLike, index_nodes: list[ast.expr], node: ast.AST
    ) -> Val:
        """``base[...]`` with integers and slices: an element, a view or an expression."""
        v: ArrayLike = base if not isinstance(base, ArrayRef) else View(base, (), base.name)
        ndim = base.type.ndim if isinstance(base, ArrayRef) else len(self.lengths(v))
        if len(index_nodes) > ndim:
            what = repr(base.name) if isinstance(base, ArrayRef) else describe(v)
            raise self.core.error(
                TypeMismatch,
                f"too many indices: {what}"
                f" has {ndim} dimension{'s' if ndim != 1 else ''} but {len(index_nodes)} "
                f"ind{'ices' if len(index_nodes) != 1 else 'ex'} were given",
                node,
            )
        items: list[Scalar | SliceSpec] = []
        for ixnode in index_nodes:
            if isinstance(ixnode, ast.Slice):
                lo, hi, step = (self._bound(b) for b in (ixnode.lower, ixnode.upper, ixnode.step))
                items.append(SliceSpec(lo, hi, step, ixnode))
            else:
                items.append(self.index_scalar(self.core.expr(ixnode), ixnode))
        self.core.at(node)
        if isinstance(v, Elementwise):
            return self._subscript_elementwise(v, items, node)
        if isinstance(base, ArrayRef):
            return self._subscript_array(base, items)
        return self._subscript_view(v, items)

    def index_scalar(self, val: Val, node: ast.expr, *, bound: bool = False) -> Scalar:
        """An index (an int: NumPy reads a bool index as a mask) or a slice bound (an int
        or a bool, as Python's slices take)."""
        s = self.core.scalar(val, node, "a slice bound" if bound else "an array index")
        if not (s.type.is_int or (bound and s.type.is_bool)):
            raise self.core.error(
                TypeMismatch,
                f"array indices must be integers, not {describe(s)}",
                node,
                hint="convert with int(...)" if s.type.is_float else "",
            )
        self.core.at(node)
        return self.core.convert(s, I64, True)

    def _bound(self, b: ast.expr | None) -> Scalar | None:
        if b is None:
            return None
        return self.index_scalar(self.core.expr(b), b, bound=True)

    def _subscript_array(self, base: ArrayRef, items: list[Scalar | SliceSpec]) -> Val:
        """``a[...]`` of a captured array: its extents are read only where needed."""
        index: list[Scalar | ViewAxis] = []
        for axis in range(base.type.ndim):
            it = items[axis] if axis < len(items) else None
            if isinstance(it, Scalar) and (
                it.nonneg or (isinstance(it.const, int) and it.const >= 0)
            ):
                index.append(it)
                continue
            n = Scalar(self.core.b.shape(base.value, axis), True, None, True)
            if isinstance(it, Scalar):
                index.append(self.wrap(it, n))
            elif it is None:
                index.append(ViewAxis(self.i64(0), self.i64(1), n))
            else:
                index.append(ViewAxis(*self.slice_range(it, n)))
        out = View(base, tuple(index), base.name)
        return out if out.axes else self.element(out, [])

    def _subscript_view(self, v: View, items: list[Scalar | SliceSpec]) -> Val:
        index: list[Scalar | ViewAxis] = []
        pending = list(items)
        for ix in v.index:
            if isinstance(ix, Scalar) or not pending:
                index.append(ix)
                continue
            it = pending.pop(0)
            if isinstance(it, Scalar):
                k = self.wrap(it, ix.length)
                index.append(self.add(ix.start, self.mul(k, ix.step)))
            else:
                start, step, length = self.slice_range(it, ix.length)
                index.append(
                    ViewAxis(
                        self.add(ix.start, self.mul(start, ix.step)),
                        self.mul(step, ix.step),
                        length,
                    )
                )
        out = View(v.base, tuple(index), v.name)
        if not out.axes:
            return self.element(out, [])
        return out

    def _subscript_elementwise(
        self, v: Elementwise, items: list[Scalar | SliceSpec], node: ast.AST
    ) -> Val:
        if any(isinstance(it, SliceSpec) for it in items):
            raise self.core.unsupported(
                node, "slicing an elementwise expression", "slice its operands instead"
            )
        ks = [
            self.wrap(it, n)
            for it, n in zip(items, v.lengths, strict=False)
            if isinstance(it, Scalar)
        ]
        rest = v.lengths[len(ks) :]
        if not rest:
            return self.element(v, ks)
        fn = v.element
        return Elementwise(rest, v.key, lambda pos, g: fn((*ks, *pos), g), v.uniform, v.reads_local)

    def slice_range(self, s: SliceSpec, n: Scalar) -> tuple[Scalar, Scalar, Scalar]:
        """Python's ``slice(lower, upper, step).indices(n)`` as (start, step, length)."""
        step = s.step if s.step is not None else self.i64(1)
        if step.const == 0:
            raise self.core.error(TypeMismatch, "slice step cannot be zero", s.node.step)
        if isinstance(step.const, int):
            if step.const > 0:
                start, length = self._forward(s, n, step)
            else:
                start, length = self._backward(s, n, step)
            return start, step, length
        # a step whose sign is known only at run time: both, then a select
        fstart, flen = self._forward(s, n, step)
        bstart, blen = self._backward(s, n, step)
        up = self.index_compare(Opcode.GT, step, self.i64(0))
        return self.select(up, fstart, bstart), step, self.select(up, flen, blen)

    def _clip(self, b: Scalar, n: Scalar, lo: Scalar, hi: Scalar) -> Scalar:
        """A slice bound: negative counts from the end, then clipped to [lo, hi]."""
        return self.max(self.min(self.wrap(b, n), hi), lo)

    def _forward(self, s: SliceSpec, n: Scalar, step: Scalar) -> tuple[Scalar, Scalar]:
        zero = self.i64(0)
        start = zero if s.lower is None else self._clip(s.lower, n, zero, n)
        stop = n if s.upper is None else self._clip(s.upper, n, zero, n)
        span = self.sub(stop, start)
        if step.const != 1:
            span = self.floordiv(self.add(span, self.sub(step, self.i64(1))), step)
        return start, self.max(span, zero)

    def _backward(self, s: SliceSpec, n: Scalar, step: Scalar) -> tuple[Scalar, Scalar]:
        minus_one = self.i64(-1)
        last = self.sub(n, self.i64(1))
        start = last if s.lower is None else self._clip(s.lower, n, minus_one, last)
        stop = minus_one if s.upper is None else self._clip(s.upper, n, minus_one, last)
        neg = self.arith.unary("neg", step, None)
        span = self.floordiv(self.add(self.sub(start, stop), self.sub(neg, self.i64(1))), neg)
        return start, self.max(span, self.i64(0))

    # -- elementwise expressions ----------------------------------------------------------

    def binop(self, op: str, left: Val, right: Val, node: ast.AST) -> Elementwise:
        """``left <op> right`` where at least one side is a view or expression."""
        la, lb = self._operand(left, node), self._operand(right, node)
        local = reads_local(left) or reads_local(right)
        lengths, uniform = self._common_lengths([la, lb], node, local)
        key = binary_result(op, la[0], lb[0])
        if key is None:
            raise self.core.error(
                TypeMismatch,
                f"unsupported operand types for '{op}': '{describe_key(la[0])}' and "
                f"'{describe_key(lb[0])}'",
                node,
            )
        fa, fb = la[2], lb[2]

        def element(pos: tuple[Scalar, ...], g: bool) -> Scalar:
            return self.arith.binop(op, fa(pos, g), fb(pos, g), node)

        return Elementwise(lengths, key, element, uniform, local)

    def compare(self, opcode: Opcode, left: Val, right: Val, node: ast.AST) -> Elementwise:
        """``row > t``: an elementwise comparison (bools)."""
        la, lb = self._operand(left, node), self._operand(right, node)
        local = reads_local(left) or reads_local(right)
        lengths, uniform = self._common_lengths([la, lb], node, local)
        fa, fb = la[2], lb[2]

        def element(pos: tuple[Scalar, ...], g: bool) -> Scalar:
            r = self.arith.compare(opcode, fa(pos, g), fb(pos, g), node)
            return Scalar(r.value, False, r.const)

        return Elementwise(lengths, (BOOL, False), element, uniform, local)

    def unary(self, name: str, operand: ArrayLike, node: ast.AST) -> Elementwise:
        key0 = self.key(operand)
        key = unary_result(name, key0) if name != "not" else None
        if key is None:
            raise self.core.error(
                TypeMismatch, f"unsupported operand type for '{name}': '{describe_key(key0)}'", node
            )
        lengths = self.lengths(operand)

        def element(pos: tuple[Scalar, ...], g: bool) -> Scalar:
            return self.arith.unary(name, self.element(operand, pos, g), node)

        return Elementwise(lengths, key, element, True, reads_local(operand))

    def map(
        self, args: list[Val], key: TypeKey, fn: Callable[[list[Scalar]], Scalar], node: ast.AST
    ) -> Elementwise:
        """A scalar function (a ufunc) applied element by element."""
        ops = [self._operand(a, node) for a in args]
        local = any(map(reads_local, args))
        lengths, uniform = self._common_lengths(ops, node, local)

        def element(pos: tuple[Scalar, ...], g: bool) -> Scalar:
            return fn([f(pos, g) for _, _, f in ops])

        return Elementwise(lengths, key, element, uniform, local)

    def _operand(
        self, v: Val, node: ast.AST
    ) -> tuple[TypeKey, tuple[Scalar, ...] | None, Callable[[tuple[Scalar, ...], bool], Scalar]]:
        if isinstance(v, ArrayRef):
            v = self.full(v)
        if isinstance(v, LocalArray):
            v = self.local(v)
        if isinstance(v, View | Elementwise):
            arr = v
            return self.key(v), self.lengths(v), lambda pos, g: self.element(arr, pos, g)
        s = self.core.scalar(v, node)
        return (s.type, s.weak), None, lambda pos, g: s

    def _common_lengths(
        self,
        ops: Sequence[tuple[TypeKey, tuple[Scalar, ...] | None, object]],
        node: ast.AST,
        local: bool = False,
    ) -> tuple[tuple[Scalar, ...], bool]:
        """The lengths of an elementwise expression (the longest operand's, so that a
        shorter one is read out of bounds), and whether every operand has them."""
        shapes = [n for _, n, _ in ops if n is not None]
        first = shapes[0]
        for other in shapes[1:]:
            if len(other) != len(first):
                raise self.core.error(
                    TypeMismatch,
                    f"operands with {len(first)} and {len(other)} dimensions cannot be "
                    "combined elementwise",
                    node,
                    hint="index the operands to views of the same number of dimensions",
                )
            for x, y in zip(first, other, strict=True):
                if isinstance(x.const, int) and isinstance(y.const, int) and x.const != y.const:
                    raise self.core.error(
                        TypeMismatch,
                        f"operands of lengths {x.const} and {y.const} cannot be combined "
                        "elementwise",
                        node,
                    )
        lengths: list[Scalar] = []
        uniform = True
        for d in range(len(first)):
            distinct: list[Scalar] = []
            for shape in shapes:
                if all(shape[d] is not x for x in distinct):
                    distinct.append(shape[d])
            fixed = [n for n in distinct if isinstance(n.const, int)]
            if local and fixed:
                # a local array's length is the expression's (it is stored into one): a
                # view of a run-time length reads past its own end where it is shorter
                uniform = uniform and len(distinct) == 1
                lengths.append(fixed[0])
                continue
            longest = distinct[0]
            for n in distinct[1:]:
                uniform = False
                longest = self.max(longest, n)
            lengths.append(longest)
        return tuple(lengths), uniform
