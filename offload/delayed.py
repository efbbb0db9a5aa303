"""Repa-style delayed arrays: lazy descriptions of arrays, fused into one kernel.

A delayed array is a function from an index to an element plus a shape. Combining them
builds a small tree; computing it (``compute_s/p/g(d)``) lowers the whole tree to ONE IR
function -- the element functions inlined into each other, NumPy leaves read as captured
arrays -- so no intermediate array is ever allocated.

    d = map(lambda x: x * 2.0, zip_with(lambda a, b: a + b, x, y))
    e = traverse(d, lambda sh: (sh[0] - 2,), lambda get, i: get(i) + get(i + 2))
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.diagnostics import OffloadError
from offload.frontend.nodes import (
    ArrayNode,
    ElementLowering,
    Index,
    NodeFunction,
    NodePath,
    types_only,
)
from offload.frontend.operators import plain
from offload.frontend.values import Val
from offload.lowering import check_and_lower

Source = Any
"""A NumPy (or device) array, or another ``Delayed``."""


class Delayed(ArrayNode):
    """Base of the delayed-array nodes: a shape and an element function of the index.

    Each node tells the frontend what it holds and lowers its own element
    (``frontend.nodes.ArrayNode``)."""

    shape: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @functools.cached_property
    def dtypes(self) -> tuple[np.dtype[Any], ...]:
        """Result dtypes, inferred by checking and lowering the tree (one per element of a
        tuple result)."""
        with types_only():  # (a collective below stands for its element by its dtypes)
            ir = check_and_lower(self, len(self.shape)).ir
        return tuple(np.dtype(t.dtype) for t in ir.result_types)

    @property
    def dtype(self) -> np.dtype[Any]:
        """The result dtype (``ValueError`` for a tuple-valued array: use ``dtypes``)."""
        dts = self.dtypes
        if len(dts) != 1:
            raise ValueError(f"this delayed array has {len(dts)} results: use .dtypes")
        return dts[0]


@dataclass(frozen=True, eq=False)
class FromFunction(Delayed):
    """``fn(*index)`` over ``shape``."""

    shape: tuple[int, ...]
    fn: Callable[..., Any]

    def functions(self) -> tuple[NodeFunction, ...]:
        return (NodeFunction("fn", self.fn),)

    def sources(self) -> tuple[tuple[str, object], ...]:
        return ()

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        return lo.call(self.fn, (*path, ("attr", "fn")), idx)


@dataclass(frozen=True, eq=False)
class Map(Delayed):
    """``fn(x[index])``."""

    fn: Callable[..., Any]
    x: Source

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return _shape(self.x)

    def functions(self) -> tuple[NodeFunction, ...]:
        return (NodeFunction("fn", self.fn),)

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("x", self.x),)

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        v = lo.element(self.x, (*path, ("attr", "x")), idx)
        return lo.call(self.fn, (*path, ("attr", "fn")), [v])


@dataclass(frozen=True, eq=False)
class ZipWith(Delayed):
    """``fn(x[index], y[index])`` over the intersection of the two shapes (as Repa)."""

    fn: Callable[..., Any]
    x: Source
    y: Source

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return tuple(min(a, b) for a, b in zip(_shape(self.x), _shape(self.y), strict=True))

    def functions(self) -> tuple[NodeFunction, ...]:
        return (NodeFunction("fn", self.fn),)

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("x", self.x), ("y", self.y))

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        vx = lo.element(self.x, (*path, ("attr", "x")), idx)
        vy = lo.element(self.y, (*path, ("attr", "y")), idx)
        return lo.call(self.fn, (*path, ("attr", "fn")), [vx, vy])


@dataclass(frozen=True, eq=False)
class Backpermute(Delayed):
    """``x[ix_fn(*index)]``: ``ix_fn`` maps a result index to a source index."""

    shape: tuple[int, ...]
    ix_fn: Callable[..., Any]
    x: Source

    def functions(self) -> tuple[NodeFunction, ...]:
        return (NodeFunction("ix_fn", self.ix_fn),)

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("x", self.x),)

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        t = lo.call(self.ix_fn, (*path, ("attr", "ix_fn")), idx)
        src = lo.index_scalars(t, len(_shape(self.x)), "backpermute's index function")
        return lo.element(self.x, (*path, ("attr", "x")), src)


@dataclass(frozen=True, eq=False)
class Traverse(Delayed):
    """``fn(get, *index)`` where ``get(*source_index)`` reads ``x``."""

    x: Source
    shape: tuple[int, ...]
    fn: Callable[..., Any]

    def functions(self) -> tuple[NodeFunction, ...]:
        return (NodeFunction("fn", self.fn, _first_param(self.fn)),)

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("x", self.x),)

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        getter = lo.getter(self.x, (*path, ("attr", "x")))
        return lo.call(self.fn, (*path, ("attr", "fn")), [getter, *idx])


@dataclass(frozen=True, eq=False)
class Reshape(Delayed):
    """``x`` read in row-major order with a new shape of the same size."""

    x: Source
    shape: tuple[int, ...]

    def functions(self) -> tuple[NodeFunction, ...]:
        return ()

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("x", self.x),)

    def static_key(self) -> tuple[object, ...]:
        return (self.shape, _shape(self.x))

    def refit(self) -> Reshape:
        """This reshape over ``x`` as computed (``x`` held a filter, whose length the
        scheduler knows only once computed): a vector is ``x`` flattened; another shape
        must still hold ``x``'s elements (``ValueError``)."""
        size = math.prod(_shape(self.x))
        if size == math.prod(self.shape):
            return self
        if len(self.shape) == 1:
            return Reshape(self.x, (size,))
        raise ValueError(
            f"cannot reshape the computed array of shape {_shape(self.x)} into {self.shape} "
            "(it holds a filter's result, shorter than the bound the reshape was built for)"
        )

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        src = lo.unravel(self.shape, _shape(self.x), idx)
        return lo.element(self.x, (*path, ("attr", "x")), src)


def from_function(shape: tuple[int, ...] | int, fn: Callable[..., Any]) -> FromFunction:
    """The array whose element at ``index`` is ``fn(*index)``."""
    return FromFunction(normalise_shape(shape), fn)


def map(fn: Callable[..., Any], x: Source) -> Map:  # the Repa name (shadows the builtin here)
    """Apply ``fn`` to every element of ``x``."""
    _shape(x)
    return Map(plain(fn), x)


def zip_with(fn: Callable[..., Any], x: Source, y: Source) -> ZipWith:
    """Combine ``x`` and ``y`` elementwise with ``fn`` (shapes of one rank)."""
    sx, sy = _shape(x), _shape(y)
    if len(sx) != len(sy):
        raise OffloadError(f"zip_with of arrays of rank {len(sx)} and {len(sy)}")
    return ZipWith(plain(fn), x, y)


def backpermute(shape: tuple[int, ...] | int, ix_fn: Callable[..., Any], x: Source) -> Backpermute:
    """The array of ``shape`` whose element at ``index`` is ``x[ix_fn(*index)]``."""
    _shape(x)
    return Backpermute(normalise_shape(shape), ix_fn, x)


def traverse(
    x: Source,
    shape_fn: Callable[[tuple[int, ...]], tuple[int, ...] | int],
    fn: Callable[..., Any],
) -> Traverse:
    """Repa's ``traverse``: new shape ``shape_fn(x.shape)`` (evaluated now) and elements
    ``fn(get, *index)``, where ``get(*j)`` reads ``x`` at ``j``."""
    return Traverse(x, normalise_shape(shape_fn(_shape(x))), fn)


def reshape(x: Source, shape: tuple[int, ...] | int) -> Reshape:
    """``x`` with a new shape of the same size (row-major order)."""
    new = normalise_shape(shape)
    old = _shape(x)
    if math.prod(new) != math.prod(old):
        raise OffloadError(f"cannot reshape an array of shape {old} into {new}")
    return Reshape(x, new)


def _shape(x: Source) -> tuple[int, ...]:
    if type(x) is np.ndarray:  # (the common leaf: its shape is a tuple of ints already)
        fast: tuple[int, ...] = x.shape
        return fast
    if isinstance(x, Delayed):
        return x.shape
    shape = getattr(x, "shape", None)
    if shape is None or not hasattr(x, "dtype"):
        raise OffloadError(
            f"a delayed array is built from arrays or delayed arrays, not {type(x).__name__}"
        )
    return tuple(int(n) for n in shape)


def _first_param(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The name of ``fn``'s first parameter (``traverse`` binds it to the getter)."""
    code = getattr(fn, "__code__", None)
    return (code.co_varnames[0],) if code is not None and code.co_argcount > 0 else ()


def normalise_shape(shape: Any) -> tuple[int, ...]:
    """``shape`` (an int or a sequence of ints) as a tuple of non-negative ints."""
    items = shape if isinstance(shape, tuple | list) else (shape,)
    dims: list[int] = []
    for n in items:
        if isinstance(n, bool):
            raise TypeError(f"shape entries must be ints, got {n!r} in {shape!r}")
        try:
            d = operator.index(n)
        except TypeError:
            raise TypeError(f"shape must be an int or a tuple of ints, got {shape!r}") from None
        if d < 0:
            raise ValueError(f"shape entries must be >= 0, got {shape!r}")
        dims.append(d)
    return tuple(dims)


__all__ = [
    "Backpermute",
    "Delayed",
    "FromFunction",
    "Map",
    "Reshape",
    "Traverse",
    "ZipWith",
    "backpermute",
    "from_function",
    "map",
    "reshape",
    "traverse",
    "zip_with",
]
