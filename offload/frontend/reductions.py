"""Reductions over views and elementwise expressions, lowered to loops with no temporary:
``np.sum``, ``np.prod``, ``np.min``/``np.max`` (``np.amin``/``np.amax``), ``np.argmin``/
``np.argmax``, ``np.mean``, ``np.var``/``np.std`` (``ddof=``), ``np.all``/``np.any``,
``np.count_nonzero``, ``np.dot`` and ``@``, ``np.linalg.norm``.

The element expression (``(a[i, :] - c[k, :]) ** 2``) is lowered inside the loop body, so
the whole reduction is one fused loop. Result types are NumPy's (64-bit Linux): ``sum`` and
``prod`` of bools and signed ints accumulate in int64, of unsigned ints in uint64, of floats
in their own type; ``mean`` of ints and bools is float64; ``argmin``/``argmax`` are int64.

Summation order of floats follows NumPy's pairwise sum (``pairwise_sum`` in NumPy's
``loops_utils.h``): fewer than 8 elements are added in order; up to 128, eight interleaved
accumulators combined as ``((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7))`` then the remainder in
order; the result is added to 0.0. An n-D operand is summed as one block in C order,
as NumPy does (a contiguous temporary, or its buffered copy of a strided view). That is
NumPy's result bit for bit for up to 128 elements. The documented difference: over 128
elements NumPy splits the range in halves recursively (and buffers strided operands in
chunks of 8192); here the eight accumulators run over the whole length (an error bound of
the same order, other last bits). ``np.dot``/``@``/``norm`` of floats
accumulate in order, where NumPy calls BLAS (whose order is the library's own).
An empty ``min``/``max``/``argmin``/``argmax`` (a ``ValueError`` in NumPy) is undefined.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from offload.diagnostics import TypeMismatch
from offload.frontend.arith import Arith
from offload.frontend.core import LoweringCore
from offload.frontend.promote import binary_result, describe_key
from offload.frontend.values import (
    ArrayRef,
    Elementwise,
    LocalArray,
    Scalar,
    Val,
    View,
    describe,
)
from offload.frontend.views import ArrayLike, Views, reads_local
from offload.ir.core import Value
from offload.ir.ops import Opcode
from offload.ir.types import BOOL, F64, I64, U64, ScalarType

REDUCTIONS = frozenset(
    {"sum", "prod", "min", "max", "argmin", "argmax", "mean", "all", "any", "dot", "norm",
     "count_nonzero", "var", "std"}
)  # fmt: skip
"""The names of intrinsics of kind ``reduce`` (frontend/intrinsics.py)."""

METHODS = frozenset(REDUCTIONS - {"norm", "count_nonzero"})
"""Reductions that are also array methods (``row.sum()``, ``u.dot(v)``)."""

_BLOCK = 8  # NumPy's pairwise sum: eight accumulators
_BASE = 128  # NumPy's pairwise sum: the largest block summed without splitting


@dataclass(frozen=True)
class Reductions:
    """Reductions and products over views (stateless: one per use is fine)."""

    core: LoweringCore
    arith: Arith

    @property
    def views(self) -> Views:
        return Views(self.core, self.arith)

    def reduce(self, name: str, args: list[Val], node: ast.Call) -> Val:
        """``np.<name>(*args)`` where ``name`` is in ``REDUCTIONS``."""
        if name == "dot":
            return self.matmul(args[0], args[1], node)
        x = self._operand(args[0], node.args[0] if node.args else node, name)
        self.core.at(node)
        if name == "sum":
            return self.sum(x, node)
        if name == "mean":
            return self.mean(x, node)
        if name in ("var", "std"):
            ddof = args[1] if len(args) > 1 else self.views.i64(0)
            return self.variance(x, name, self.core.scalar(ddof, node, "ddof"), node)
        if name == "prod":
            return self.prod(x, node)
        if name in ("min", "max"):
            return self.extreme(x, name, node)
        if name in ("argmin", "argmax"):
            return self.arg_extreme(x, name, node)
        if name in ("all", "any"):
            return self.all_any(x, name, node)
        if name == "count_nonzero":
            return self.count_nonzero(x, node)
        assert name == "norm"
        return self.norm(x, node)

    def _operand(self, v: Val, node: ast.AST, name: str, weak: bool = False) -> ArrayLike:
        """``v`` as something with elements; a local array is read here, where the
        reduction is written (``weak``: a list's elements as Python numbers)."""
        if isinstance(v, ArrayRef) and v.type.ndim > 0:
            return self.views.full(v)
        if isinstance(v, LocalArray):
            return self.views.local(v, weak)
        if isinstance(v, View | Elementwise):
            return v
        raise self.core.error(
            TypeMismatch,
            f"np.{name}() needs an array, a view or an elementwise expression of them here, "
            f"not a {describe(v)}",
            node,
            hint="reduce a view such as a[i, :] or an expression such as (a[i] - b[j]) ** 2",
        )

    # -- loops -------------------------------------------------------------------------

    def counted(
        self,
        n: Scalar,
        init: list[Value],
        body: Callable[[Scalar, list[Value]], list[Value]],
        *,
        start: Scalar | None = None,
        step: int = 1,
        hint: str = "reduce",
    ) -> list[Value]:
        """``for k in range(start, n, step)`` carrying ``init``; returns the final values.
        ``body`` may build blocks of its own (an element that is itself a loop)."""
        b = self.core.b
        first = start if start is not None else self.views.i64(0)
        header = b.new_block([I64, *(v.type for v in init)], hint=hint)
        b.jump(header, [first.value, *init])
        b.position_at_end(header)
        k, accs = header.args[0], list(header.args[1:])
        body_block = b.new_block(hint=f"{hint}_body")
        exit_block = b.new_block(hint=f"{hint}_end")
        b.branch(b.binary(Opcode.LT, k, n.value), body_block, exit_block)
        b.position_at_end(body_block)
        new = body(Scalar(k, True, None, first.nonneg), accs)
        b.jump(header, [b.binary(Opcode.ADD, k, b.const(step, I64)), *new])
        b.position_at_end(exit_block)
        return accs

    def each(
        self,
        lengths: Sequence[Scalar],
        init: list[Value],
        body: Callable[[tuple[Scalar, ...], list[Value]], list[Value]],
    ) -> list[Value]:
        """Every position of ``lengths`` in C order (nested counted loops)."""
        if not lengths:
            return body((), init)

        def outer(k: Scalar, accs: list[Value]) -> list[Value]:
            return self.each(lengths[1:], accs, lambda pos, a: body((k, *pos), a))

        return self.counted(lengths[0], init, outer)

    def branch(
        self, cond: Value, then: Callable[[], list[Value]], other: Callable[[], list[Value]]
    ) -> list[Value]:
        b = self.core.b
        t, e = b.new_block(hint="then"), b.new_block(hint="else")
        b.branch(cond, t, e)
        b.position_at_end(t)
        tv = then()
        join = b.new_block([v.type for v in tv], hint="endif")
        b.jump(join, tv)
        b.position_at_end(e)
        ev = other()
        b.jump(join, ev)
        b.position_at_end(join)
        return list(join.args)

    # -- sums --------------------------------------------------------------------------

    def sum(self, x: ArrayLike, node: ast.AST) -> Scalar:
        t = _sum_type(self.views.key(x)[0])
        return Scalar(self._total(x, t), False)

    def mean(self, x: ArrayLike, node: ast.AST) -> Scalar:
        et = self.views.key(x)[0]
        t = et if et.is_float else F64
        total = self._total(x, t)
        count = self._count(x)
        b = self.core.b
        return Scalar(b.binary(Opcode.TRUEDIV, total, b.cast(count.value, t)), False)

    def _count(self, x: ArrayLike) -> Scalar:
        """The number of ``x``'s elements (the product of its lengths)."""
        count = self.views.i64(1)
        for n in self.views.lengths(x):
            count = self.views.mul(count, n)
        return count

    def variance(self, x: ArrayLike, name: str, ddof: Scalar, node: ast.AST) -> Scalar:
        """``np.var``/``np.std`` (``ddof``: an integer) as NumPy's ``_var`` computes them:
        the mean (``mean``), the sum in NumPy's order of ``(x - mean) * (x - mean)`` in the
        mean's type, divided by ``max(n - ddof, 0)``; ``std`` its square root."""
        if not ddof.type.is_int:
            raise self.core.error(TypeMismatch, f"np.{name}()'s ddof must be an integer", node)
        b = self.core.b
        m = self.mean(x, node)
        t = m.type

        def deviation(xs: list[Scalar]) -> Scalar:
            d = self.arith.binop("sub", xs[0], m, node)
            return Scalar(b.binary(Opcode.MUL, d.value, d.value), False)

        squares = self.views.map([x], (t, False), deviation, node)
        count = self._count(x)
        dof = self.core.convert(self.arith.binop("sub", count, ddof, node), I64).value
        dof = b.binary(Opcode.MAX, dof, b.const(0, I64))
        var = b.binary(Opcode.TRUEDIV, self._total(squares, t), b.cast(dof, t))
        return Scalar(var if name == "var" else b.math("sqrt", [var]), False)

    def _total(self, x: ArrayLike, t: ScalarType) -> Value:
        """The sum of ``x``'s elements in type ``t``, in NumPy's order for floats."""
        b = self.core.b
        zero = b.const(0, t)
        lengths = self.views.lengths(x)
        if not t.is_float:

            def add(pos: tuple[Scalar, ...], accs: list[Value]) -> list[Value]:
                return [b.binary(Opcode.ADD, accs[0], self._elem(x, pos, t))]

            return self.each(lengths, [zero], add)[0]
        # NumPy sums an n-D operand as one block in C order (a contiguous temporary, or
        # its buffered copy of a strided view): flatten it
        size = self.views.i64(1)
        for n in lengths:
            size = self.views.mul(size, n)
        return b.binary(
            Opcode.ADD, zero, self.pairwise(size, lambda f: self._flat(x, f, lengths, t), t)
        )

    def pairwise(self, n: Scalar, elem: Callable[[Scalar], Value], t: ScalarType) -> Value:
        """NumPy's pairwise sum of ``elem(0) .. elem(n - 1)`` (exact up to 128 elements;
        see the module docstring), in one code path: eight lanes over the whole blocks of
        eight, combined pairwise, then the rest in order. NumPy starts its lanes at the
        first eight elements and sums fewer than eight in order from 0.0; lanes that start
        at 0.0 give the same bits once the result is added to 0.0 (only a zero's sign could
        differ before that), and with no whole block the rest is that same in-order sum."""
        b = self.core.b
        v = self.views
        block = v.i64(_BLOCK)
        whole = v.sub(n, self.arith.binop("mod", n, block, None))

        def lanes(k: Scalar, accs: list[Value]) -> list[Value]:
            return [b.binary(Opcode.ADD, accs[j], elem(v.add(k, v.i64(j)))) for j in range(_BLOCK)]

        zero = b.const(0, t)
        r = self.counted(whole, [zero] * _BLOCK, lanes, step=_BLOCK, hint="sum8")
        pairs = [b.binary(Opcode.ADD, r[j], r[j + 1]) for j in range(0, _BLOCK, 2)]
        quads = [b.binary(Opcode.ADD, pairs[0], pairs[1]), b.binary(Opcode.ADD, pairs[2], pairs[3])]
        res = b.binary(Opcode.ADD, quads[0], quads[1])

        def rest(k: Scalar, accs: list[Value]) -> list[Value]:
            return [b.binary(Opcode.ADD, accs[0], elem(k))]

        return self.counted(n, [res], rest, start=whole, hint="sum")[0]

    def _elem(self, x: ArrayLike, pos: Sequence[Scalar], t: ScalarType) -> Value:
        return self.core.convert(self.views.element(x, pos), t).value

    def _flat(self, x: ArrayLike, f: Scalar, lengths: Sequence[Scalar], t: ScalarType) -> Value:
        """The element at C-order flat position ``f``."""
        pos: list[Scalar] = []
        rest = f
        for n in reversed(lengths[1:]):
            pos.insert(0, self.arith.binop("mod", rest, n, None))
            rest = self.arith.binop("floordiv", rest, n, None)
        pos.insert(0, rest)
        return self._elem(x, [Scalar(p.value, True, None, True) for p in pos], t)

    def prod(self, x: ArrayLike, node: ast.AST) -> Scalar:
        t = _sum_type(self.views.key(x)[0])
        b = self.core.b

        def mul(pos: tuple[Scalar, ...], accs: list[Value]) -> list[Value]:
            return [b.binary(Opcode.MUL, accs[0], self._elem(x, pos, t))]

        return Scalar(self.each(self.views.lengths(x), [b.const(1, t)], mul)[0], False)

    def extreme(self, x: ArrayLike, name: str, node: ast.AST) -> Scalar:
        t = self.views.key(x)[0]
        lengths = self.views.lengths(x)
        first = self._elem(x, [self.views.i64(0)] * len(lengths), t)

        def pick(pos: tuple[Scalar, ...], accs: list[Value]) -> list[Value]:
            return [self._keep(name, accs[0], self._elem(x, pos, t), t)]

        return Scalar(self.each(lengths, [first], pick)[0], False)

    def _keep(self, name: str, acc: Value, x: Value, t: ScalarType) -> Value:
        """NumPy's ``maximum``/``minimum`` as a reduction step: NaN wins, ties keep ``acc``."""
        b = self.core.b
        if t.is_bool:
            return b.binary(Opcode.OR if name == "max" else Opcode.AND, acc, x)
        if not t.is_float:
            return b.binary(Opcode.MAX if name == "max" else Opcode.MIN, acc, x)
        keeps = b.binary(Opcode.GE if name == "max" else Opcode.LE, acc, x)
        keeps = b.binary(Opcode.OR, keeps, b.binary(Opcode.NE, acc, acc))
        return b.select(keeps, acc, x)

    def arg_extreme(self, x: ArrayLike, name: str, node: ast.AST) -> Scalar:
        t = self.views.key(x)[0]
        b = self.core.b
        lengths = self.views.lengths(x)
        first = self._elem(x, [self.views.i64(0)] * len(lengths), t)
        zero = b.const(0, I64)

        def pick(pos: tuple[Scalar, ...], accs: list[Value]) -> list[Value]:
            best, at, flat = accs
            e = self._elem(x, pos, t)
            if t.is_bool:
                better = (
                    b.binary(Opcode.AND, e, b.unary(Opcode.NOT, best))
                    if name == "argmax"
                    else b.binary(Opcode.AND, best, b.unary(Opcode.NOT, e))
                )
            else:
                better = b.binary(Opcode.GT if name == "argmax" else Opcode.LT, e, best)
                if t.is_float:  # the first NaN is the answer
                    nan_now = b.binary(Opcode.NE, e, e)
                    nan_before = b.binary(Opcode.NE, best, best)
                    first_nan = b.binary(Opcode.AND, nan_now, b.unary(Opcode.NOT, nan_before))
                    better = b.binary(Opcode.OR, better, first_nan)
            return [
                b.select(better, e, best),
                b.select(better, flat, at),
                b.binary(Opcode.ADD, flat, b.const(1, I64)),
            ]

        out = self.each(lengths, [first, zero, zero], pick)
        return Scalar(out[1], False, None, True)

    def all_any(self, x: ArrayLike, name: str, node: ast.AST) -> Scalar:
        b = self.core.b

        def step(pos: tuple[Scalar, ...], accs: list[Value]) -> list[Value]:
            truth = self.core.truth(self.views.element(x, pos), node).value
            return [b.binary(Opcode.AND if name == "all" else Opcode.OR, accs[0], truth)]

        init = b.const(name == "all", BOOL)
        return Scalar(self.each(self.views.lengths(x), [init], step)[0], False)

    def count_nonzero(self, x: ArrayLike, node: ast.AST) -> Scalar:
        """``np.count_nonzero(x)``: the elements whose truth is ``True``, an int64 (NumPy's
        ``intp``, a strong scalar)."""
        b = self.core.b

        def step(pos: tuple[Scalar, ...], accs: list[Value]) -> list[Value]:
            truth = self.core.truth(self.views.element(x, pos), node).value
            return [b.binary(Opcode.ADD, accs[0], b.cast(truth, I64))]

        total = self.each(self.views.lengths(x), [b.const(0, I64)], step)[0]
        return Scalar(total, False, None, True)

    def norm(self, x: ArrayLike, node: ast.AST) -> Scalar:
        et = self.views.key(x)[0]
        t = et if et.is_float else F64
        b = self.core.b

        def sq(pos: tuple[Scalar, ...], accs: list[Value]) -> list[Value]:
            e = self._elem(x, pos, t)
            return [b.binary(Opcode.ADD, accs[0], b.binary(Opcode.MUL, e, e))]

        total = self.each(self.views.lengths(x), [b.const(0, t)], sq)[0]
        return Scalar(b.math("sqrt", [total]), False)

    # -- products ----------------------------------------------------------------------

    def matmul(self, left: Val, right: Val, node: ast.AST) -> Val:
        """``np.dot(u, v)`` / ``u @ v``: vector·vector is a scalar; a matrix and a vector
        (or two matrices) give an elementwise expression whose every element is a dot."""
        u = self._operand(left, node, "dot")
        w = self._operand(right, node, "dot")
        nu, nw = len(self.views.lengths(u)), len(self.views.lengths(w))
        if nu > 2 or nw > 2:
            raise self.core.error(
                TypeMismatch, "dot products of arrays of more than 2 dimensions", node
            )
        key = binary_result("mul", self.views.key(u), self.views.key(w))
        if key is None:
            raise self.core.error(
                TypeMismatch,
                f"cannot multiply '{describe_key(self.views.key(u))}' and "
                f"'{describe_key(self.views.key(w))}'",
                node,
            )
        t = key[0]
        lu, lw = self.views.lengths(u), self.views.lengths(w)
        self._same_length(lu[-1], lw[0], node)
        if nu == 1 and nw == 1:
            return self.dot(u, w, t)
        views = self.views

        def element(pos: tuple[Scalar, ...], g: bool) -> Scalar:
            a = views.item(u, pos[0]) if nu == 2 else u
            rest = pos[1:] if nu == 2 else pos
            c = _column(views, w, rest[0]) if nw == 2 else w
            assert isinstance(a, View | Elementwise) and isinstance(c, View | Elementwise)
            return self.dot(a, c, t)

        lengths = (*lu[:-1], *lw[1:])
        return Elementwise(lengths, (t, False), element, True, reads_local(u) or reads_local(w))

    def dot(self, u: ArrayLike, w: ArrayLike, t: ScalarType) -> Scalar:
        """``u · w`` over the longer length: a shorter operand is read out of bounds."""
        b = self.core.b
        v = self.views
        lu, lw = v.lengths(u)[0], v.lengths(w)[0]
        same = lu is lw

        def step(k: Scalar, accs: list[Value]) -> list[Value]:
            x = self.core.convert(v.element(u, [k], not same), t).value
            y = self.core.convert(v.element(w, [k], not same), t).value
            prod = b.binary(Opcode.AND if t.is_bool else Opcode.MUL, x, y)
            return [b.binary(Opcode.OR if t.is_bool else Opcode.ADD, accs[0], prod)]

        n = lu if same else v.max(lu, lw)
        return Scalar(self.counted(n, [b.const(0, t)], step, hint="dot")[0], False)

    def _same_length(self, x: Scalar, y: Scalar, node: ast.AST) -> None:
        if isinstance(x.const, int) and isinstance(y.const, int) and x.const != y.const:
            raise self.core.error(TypeMismatch, f"shapes not aligned: {x.const} != {y.const}", node)


def _column(views: Views, w: ArrayLike, j: Scalar) -> ArrayLike:
    """``w[:, j]`` of a 2-D view or expression."""
    if isinstance(w, View):
        index = list(w.index)
        axes = [k for k, ix in enumerate(index) if not isinstance(ix, Scalar)]
        ax = w.index[axes[1]]
        assert not isinstance(ax, Scalar)
        index[axes[1]] = views.add(ax.start, views.mul(j, ax.step))
        return View(w.base, tuple(index), w.name)
    fn = w.element
    return Elementwise(
        w.lengths[:1], w.key, lambda pos, g: fn((pos[0], j), g), w.uniform, w.reads_local
    )


def _sum_type(t: ScalarType) -> ScalarType:
    """NumPy's accumulator of ``sum``/``prod`` (64-bit Linux)."""
    if t.is_float:
        return t
    if t.is_int and not t.is_signed and not t.is_bool:
        return U64
    return I64
