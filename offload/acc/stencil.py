"""``stencil(fn, a, boundary)``: ``fn(get)`` computes each element from neighbours read
with ``get(d0, d1, ...)`` at offsets that are compile-time constants.

The element at ``i`` is ``fn`` with ``get(*d)`` reading ``a[i + d]`` where that is inside
the array, and outside it what ``boundary`` says: ``"clamp"`` (the nearest edge element),
``"mirror"`` (reflected about the edge element, which is not repeated: ``numpy.pad``'s
``reflect``), ``"wrap"`` (periodic) or ``constant(v)``. The offsets are read from the
lowering (a non-constant offset is an ``OffloadError``); ``extent`` reads them from the
source for ``explain`` and for skeletons that split the interior from the border.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from offload.acc.base import Scheduled
from offload.acc.nodes import as_source
from offload.acc.skeletons.operands import leaves, python_ints_fit, source_dtypes
from offload.acc.values import Item, from_items, items_key, lower_items, shape_of, to_items
from offload.diagnostics import TypeMismatch
from offload.frontend.nodes import ArrayNode, ElementLowering, Index, NodeFunction, NodePath
from offload.frontend.source import get_source
from offload.frontend.values import Scalar, TupleVal, Val

BOUNDARIES = ("clamp", "mirror", "wrap")


@dataclass(frozen=True)
class Constant:
    """The ``constant(v)`` boundary: reads outside the array give ``v``."""

    value: object
    """``v`` as held (``values.to_items``)."""


def constant(v: Any) -> Constant:
    """The boundary whose reads outside the array give ``v`` (a number, or a tuple for a
    tuple-valued array)."""
    return Constant(to_items(v, "the boundary value"))


def _clamp(p: int, n: int) -> int:
    return min(max(p, 0), n - 1)


def _clamp_hi(p: int, n: int) -> int:
    return min(p, n - 1)


def _clamp_lo(p: int, n: int) -> int:
    return max(p, 0)


def _mirror(p: int, n: int) -> int:
    # mirror(p) == mirror(-p), with period m; reflecting first keeps a read near an edge
    # bounded near it for the range analysis (a streamed chunk's read window)
    m = max(2 * (n - 1), 1)  # (n == 1: every p reflects to 0)
    q = abs(p) % m
    return m - q if q >= n else q


def _wrap(p: int, n: int) -> int:
    return p % n


# The near rules: p = c + k with 0 <= c < n, for a reach |k| that the axis's extent
# allows (``_NEAR_OK``): one select, no division.


def _wrap_hi(p: int, n: int) -> int:
    return p - n if p >= n else p  # (0 < k <= n)


def _wrap_lo(p: int, n: int) -> int:
    return p + n if p < 0 else p  # (-n <= k < 0)


def _mirror_hi(p: int, n: int) -> int:
    return 2 * (n - 1) - p if p >= n else p  # (0 < k < n: one reflection about n - 1)


def _mirror_lo(p: int, n: int) -> int:
    return -p if p < 0 else p  # (-n < k < 0: one reflection about 0)


def _wrap_near(n: int, reach: int) -> bool:
    return reach <= n


def _mirror_near(n: int, reach: int) -> bool:
    return reach < n


_NEAR: dict[str, tuple[Callable[[int, int], int], Callable[[int, int], int]]] = {
    "wrap": (_wrap_lo, _wrap_hi),
    "mirror": (_mirror_lo, _mirror_hi),
}
_NEAR_OK: dict[str, Callable[[int, int], bool]] = {"wrap": _wrap_near, "mirror": _mirror_near}
_FAR: dict[str, Callable[[int, int], int]] = {"wrap": _wrap, "mirror": _mirror}
NEAR_RANK = 3
"""The least rank of a wrap or mirror stencil read without the interior/border split, by
the near rules (``Stencil._near_or_far``). H100, ``benchmarks.lab.stencil_split`` (run 28,
µs, split -> near): 7-point 256^3 mirror 120.7 -> 89.3, wrap 161.8 -> 91.1 (a warp whose
32 elements straddle the border runs both arms of the split: 2 of a 256-row's 8 warps);
rank 2 and 1 went both ways (5-point 4096^2 wrap 92.8 -> 75.5, 3x3 box mirror 73.8 ->
84.6, 9 taps of 2^24 wrap 72.7 -> 76.1: the interior reads no rule at all), so they
keep the split. A rank-3 clamp stencil drops the split too, once its kernel walks the planes
(``offload.ptx.passes.walk``): run 30, 7-point 256^3 clamp 72.3 (split, not walked) ->
82.3 (split, walked) -> see ``docs/results.md``."""


def _own(helper: Callable[..., Any]) -> NodePath:
    """The path of one of this module's helpers: itself (``("const", helper)``), so that a
    global it reads (``_mirror``) is looked up, and its resolution tested on every call, in
    this module -- not in the user's function, whose globals do not hold it (a test that
    failed on every call, so that every call lowered the tree again)."""
    return (("const", helper),)


def _all(lo: ElementLowering, tests: list[Any]) -> Any:
    """The conjunction of ``tests`` (at least one), left to right."""
    cond = tests[0]
    for more in tests[1:]:
        cond = lo.binop("and", cond, more)
    return cond


def _inside(p: int, n: int) -> bool:
    return 0 <= p < n


def _pick(inside: bool, x: Any, v: Any) -> Any:
    return x if inside else v


def _nonneg(v: Val) -> Val:
    return replace(v, nonneg=True) if isinstance(v, Scalar) else v


def _at_least(c: int, k: int) -> bool:
    return c >= k


def _below(c: int, k: int, n: int) -> bool:
    return c < n - k


@dataclass(frozen=True, eq=False)
class _Around(ArrayNode):
    """The neighbourhood of one element while it is lowered: ``get(*d)`` reads the
    source at ``centre + d`` under the boundary rule (never part of a tree)."""

    stencil: Stencil
    centre: tuple[Any, ...]
    path: NodePath
    """The stencil node's path."""
    inner: tuple[tuple[int, int], ...] | None = None
    """In the interior arm (``Stencil.lower_element``): the offsets every element of the
    arm may read without a boundary rule (a read at another offset keeps it)."""
    near: tuple[tuple[int, int], ...] | None = None
    """In a wrap or mirror stencil's near arm: the offsets whose reach every axis's extent
    allows (``_NEAR_OK``), read with the near rules (a read at another offset takes the
    rule for any reach)."""

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return shape_of(self.stencil.a)

    def functions(self) -> tuple[NodeFunction, ...]:
        return ()

    def sources(self) -> tuple[tuple[str, object], ...]:
        return ()

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        st = self.stencil
        offsets: list[int] = []
        for d in idx:
            if not isinstance(d, Scalar) or type(d.const) is not int:
                zeros = ", 0" * (len(idx) - 1)
                raise TypeMismatch.at(
                    "stencil offsets must be compile-time integer constants "
                    f"(get(-1{zeros}), not get(k{zeros}))",
                    None,
                    hint="write each neighbour's offset as a literal or a constant expression",
                )
            offsets.append(d.const)
        inner = self.inner
        if inner is not None and all(a <= k <= b for k, (a, b) in zip(offsets, inner, strict=True)):
            direct = [
                c if k == 0 else replace(lo.binop("add", c, d), nonneg=True)  # type: ignore[arg-type]
                for c, d, k in zip(self.centre, idx, offsets, strict=True)
            ]  # (the interior's test: centre + k is inside the array for these offsets)
            return lo.element(st.a, (*self.path, ("attr", "a")), direct)
        dims = lower_items(lo, st.dims, (*self.path, ("attr", "dims")))
        assert isinstance(dims, TupleVal)
        bound = st.boundary
        pos: list[Any] = []
        inside: list[Any] = []
        reads = zip(self.centre, idx, dims.items, offsets, strict=True)
        for axis, (c, d, n, k) in enumerate(reads):
            if k == 0:
                pos.append(c)
                continue
            p = lo.binop("add", c, d)  # type: ignore[arg-type]
            if axis == 0 and st.lead is not None:
                rule: Callable[[int, int], int] = _clamp_hi if k > 0 else _clamp_lo
            elif isinstance(bound, Constant):
                inside.append(lo.call(_inside, _own(_inside), [p, n]))
                rule = _clamp
            elif bound == "clamp":
                rule = _clamp_hi if k > 0 else _clamp_lo
            elif self.near is not None and self.near[axis][0] <= k <= self.near[axis][1]:
                rule = _NEAR[bound][k > 0]  # type: ignore[index]
            else:
                rule = _FAR[bound]  # type: ignore[index]
            # (every rule gives a position in [0, n) -- n > 0 where an element exists --
            # so the read needs no negative-index test)
            pos.append(_nonneg(lo.call(rule, _own(rule), [p, n])))
        x = lo.element(st.a, (*self.path, ("attr", "a")), pos)
        if not inside:
            return x
        assert isinstance(bound, Constant)
        v = lower_items(lo, bound.value, (*self.path, ("attr", "boundary"), ("attr", "value")))
        return lo.call(_pick, _own(_pick), [_all(lo, inside), x, v])


@dataclass(frozen=True, eq=False)
class Stencil(Scheduled):
    """``fn(get)`` at every element of ``a`` (module docstring)."""

    replayable = True

    fn: Callable[..., Any]
    a: Any
    boundary: object
    """``"clamp"``, ``"mirror"``, ``"wrap"`` or a ``Constant``."""
    dims: Item
    """The extents of ``a`` (captured: a new size does not compile again)."""
    lead: str | None = None
    """``"clamp"``: the leading axis clamps whatever ``boundary`` is (a streamed chunk's
    kernel: ``offload.stream.stencils`` computes the rows whose reads cross the leading
    axis's ends apart); ``None``: every axis follows ``boundary``."""

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return shape_of(self.a)

    def refit(self) -> Stencil:
        """This stencil with its extents taken anew from ``a`` (``a`` was a filter, whose
        length the scheduler knows only once computed)."""
        shape = shape_of(self.a)
        if tuple(from_items(self.dims)) == shape:  # type: ignore[arg-type]
            return self
        dims = to_items(shape, "the shape")
        assert isinstance(dims, Item)
        return replace(self, dims=dims)

    def functions(self) -> tuple[NodeFunction, ...]:
        return (NodeFunction("fn", self.fn, _first_param(self.fn)),)

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("a", self.a),)

    def static_key(self) -> tuple[object, ...]:
        b = self.boundary
        bound = ("constant", items_key(b.value)) if isinstance(b, Constant) else b
        return ("stencil", bound) if self.lead is None else ("stencil", bound, self.lead)

    def materialised_sources(self) -> tuple[str, ...]:
        return ("a",)  # each element is read by several neighbours: computed once

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        """``fn`` at ``idx``, split (Accelerate's interior/border split): where every read
        of the offsets ``extent`` finds is inside the array, ``fn`` reads them with no
        boundary rule; elsewhere -- the border -- every read applies it. One test per
        element instead of a clamp (or a ``%``) per read and axis."""

        ext = self.extent
        if all(e == (0, 0) for e in ext):
            return self._arm(lo, path, idx)
        if self.boundary in _NEAR and len(ext) >= NEAR_RANK:
            return self._near_or_far(lo, path, idx, ext)
        if self.boundary == "clamp" and len(ext) >= NEAR_RANK:
            return self._arm(lo, path, idx)  # every read clamped: a min and a max an axis
        dims = lower_items(lo, self.dims, (*path, ("attr", "dims")))
        assert isinstance(dims, TupleVal)
        tests: list[Any] = []
        for c, n, (a, b) in zip(idx, dims.items, ext, strict=True):
            if a < 0:
                tests.append(lo.call(_at_least, _own(_at_least), [c, lo.constant(-a)]))
            if b > 0:
                tests.append(lo.call(_below, _own(_below), [c, lo.constant(b), n]))
        return lo.branch(
            _all(lo, tests),
            lambda: self._arm(lo, path, idx, inner=ext),
            lambda: self._arm(lo, path, idx),
            uniform=True,
        )

    def _arm(
        self,
        lo: ElementLowering,
        path: NodePath,
        idx: Index,
        *,
        inner: tuple[tuple[int, int], ...] | None = None,
        near: tuple[tuple[int, int], ...] | None = None,
    ) -> Val:
        """``fn`` called with a getter of the neighbourhood of ``idx`` (``_Around``)."""
        around = _Around(self, tuple(idx), path, inner, near)
        getter = lo.getter(around, (*path, ("attr", "a")))
        return lo.call(self.fn, (*path, ("attr", "fn")), [getter])

    def _near_or_far(
        self, lo: ElementLowering, path: NodePath, idx: Index, ext: tuple[tuple[int, int], ...]
    ) -> Val:
        """A wrap or mirror stencil: no interior/border split, every read applies the rule,
        but where each axis is longer than the reach (a test of the kernel's extents and
        constants, the same for every element: a ``uniform`` branch) the rule is one
        select (``_NEAR``) -- as cheap as a clamp's ``min`` -- else Python's ``%``."""

        dims = lower_items(lo, self.dims, (*path, ("attr", "dims")))
        assert isinstance(dims, TupleVal)
        ok = _NEAR_OK[self.boundary]  # type: ignore[index]
        tests: list[Any] = [
            lo.call(ok, _own(ok), [n, lo.constant(max(-a, b))])
            for axis, (n, (a, b)) in enumerate(zip(dims.items, ext, strict=True))
            if (a, b) != (0, 0) and not (axis == 0 and self.lead is not None)
        ]
        if not tests:
            return self._arm(lo, path, idx, near=ext)
        return lo.branch(
            _all(lo, tests),
            lambda: self._arm(lo, path, idx, near=ext),
            lambda: self._arm(lo, path, idx),
            uniform=True,
        )

    @property
    def extent(self) -> tuple[tuple[int, int], ...]:
        """The least and greatest offset of each axis that ``fn``'s source reads
        (``(0, 0)`` where it reads none)."""
        return extent(self.fn, len(self.shape))


def _first_param(fn: Callable[..., Any]) -> tuple[str, ...]:
    code = getattr(fn, "__code__", None)
    return (code.co_varnames[0],) if code is not None and code.co_argcount > 0 else ()


def extent(fn: Callable[..., Any], rank: int) -> tuple[tuple[int, int], ...]:
    """The offsets ``fn(get)`` reads, per axis, from its source: ``get(...)`` calls whose
    arguments are integer expressions of literals (``_literal``). A call with another
    argument (a named constant) is not counted here: the lowering, which requires
    constants, knows every offset (``offload.dask.stencils`` reads them from the IR)."""
    node = get_source(fn).node  # type: ignore[arg-type]
    params = node.args.args
    if not params:
        raise TypeError("a stencil function takes the element getter as its parameter")
    get = params[0].arg
    lo, hi = [0] * rank, [0] * rank
    for call in ast.walk(node):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            continue
        if call.func.id != get or len(call.args) != rank:
            continue
        offs = [_literal(a) for a in call.args]
        if any(o is None for o in offs):
            continue
        for k, o in enumerate(offs):
            assert o is not None
            lo[k], hi[k] = min(lo[k], o), max(hi[k], o)
    return tuple(zip(lo, hi, strict=True))


_INT_OPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
}


def _literal(e: ast.expr) -> int | None:
    """An integer offset written with literals, signs, ``+``, ``-`` and ``*`` (``get(1 +
    1, -2 * 1)``), else ``None``."""
    if isinstance(e, ast.Constant) and type(e.value) is int:
        return e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub | ast.UAdd):
        v = _literal(e.operand)
        return None if v is None else (-v if isinstance(e.op, ast.USub) else v)
    if isinstance(e, ast.BinOp) and type(e.op) in _INT_OPS:
        a, b = _literal(e.left), _literal(e.right)
        return None if a is None or b is None else _INT_OPS[type(e.op)](a, b)
    return None


def stencil(fn: Callable[..., Any], a: Any, boundary: str | Constant = "clamp") -> Stencil:
    """``fn(get)`` at every element of ``a`` (ranks 1-3), ``get(d0, ...)`` reading the
    neighbour at constant offsets ``d``; ``boundary``: ``"clamp"``, ``"mirror"``,
    ``"wrap"`` or ``constant(v)`` for the reads outside ``a``."""
    if not callable(fn):
        raise TypeError(f"the stencil function must be callable, not {type(fn).__name__}")
    if not (isinstance(boundary, Constant) or boundary in BOUNDARIES):
        raise ValueError(
            f"boundary must be 'clamp', 'mirror', 'wrap' or constant(v), not {boundary!r}"
        )
    a = as_source(a)
    shape = shape_of(a)
    if not 1 <= len(shape) <= 3:
        raise ValueError(f"a stencil reads an array of rank 1 to 3, not {len(shape)}")
    if isinstance(boundary, Constant):  # (numpy.pad's constant_values raises too)
        value = from_items(boundary.value)
        have, want = len(leaves(value)), len(source_dtypes(a))
        if have != want:
            raise ValueError(
                f"stencil: the boundary value {value!r} has {have} component(s), the "
                f"array's elements {want}"
            )
        python_ints_fit(value, a, "stencil: the boundary value")
    dims = to_items(shape, "the shape")
    assert isinstance(dims, Item)
    return Stencil(fn, a, boundary, dims)
