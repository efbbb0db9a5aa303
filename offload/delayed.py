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
import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.diagnostics import OffloadError

Source = Any
"""A NumPy (or device) array, or another ``Delayed``."""


class Delayed:
    """Base of the delayed-array nodes: a shape and an element function of the index."""

    shape: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @functools.cached_property
    def dtypes(self) -> tuple[np.dtype[Any], ...]:
        """Result dtypes, inferred by lowering the tree (one per element of a tuple result)."""
        # The one lazy use of the frontend from this leaf module (no static import: the
        # frontend imports this module).
        lower = importlib.import_module("offload.frontend.lower").lower
        ir = lower(self, len(self.shape)).ir
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


@dataclass(frozen=True, eq=False)
class Map(Delayed):
    """``fn(x[index])``."""

    fn: Callable[..., Any]
    x: Source

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return _shape(self.x)


@dataclass(frozen=True, eq=False)
class ZipWith(Delayed):
    """``fn(x[index], y[index])`` over the intersection of the two shapes (as Repa)."""

    fn: Callable[..., Any]
    x: Source
    y: Source

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return tuple(min(a, b) for a, b in zip(_shape(self.x), _shape(self.y), strict=True))


@dataclass(frozen=True, eq=False)
class Backpermute(Delayed):
    """``x[ix_fn(*index)]``: ``ix_fn`` maps a result index to a source index."""

    shape: tuple[int, ...]
    ix_fn: Callable[..., Any]
    x: Source


@dataclass(frozen=True, eq=False)
class Traverse(Delayed):
    """``fn(get, *index)`` where ``get(*source_index)`` reads ``x``."""

    x: Source
    shape: tuple[int, ...]
    fn: Callable[..., Any]


@dataclass(frozen=True, eq=False)
class Reshape(Delayed):
    """``x`` read in row-major order with a new shape of the same size."""

    x: Source
    shape: tuple[int, ...]


def from_function(shape: tuple[int, ...] | int, fn: Callable[..., Any]) -> FromFunction:
    """The array whose element at ``index`` is ``fn(*index)``."""
    return FromFunction(_check_shape(shape), fn)


def map(fn: Callable[..., Any], x: Source) -> Map:  # the Repa name (shadows the builtin here)
    """Apply ``fn`` to every element of ``x``."""
    _shape(x)
    return Map(fn, x)


def zip_with(fn: Callable[..., Any], x: Source, y: Source) -> ZipWith:
    """Combine ``x`` and ``y`` elementwise with ``fn`` (shapes of one rank)."""
    sx, sy = _shape(x), _shape(y)
    if len(sx) != len(sy):
        raise OffloadError(f"zip_with of arrays of rank {len(sx)} and {len(sy)}")
    return ZipWith(fn, x, y)


def backpermute(shape: tuple[int, ...] | int, ix_fn: Callable[..., Any], x: Source) -> Backpermute:
    """The array of ``shape`` whose element at ``index`` is ``x[ix_fn(*index)]``."""
    _shape(x)
    return Backpermute(_check_shape(shape), ix_fn, x)


def traverse(
    x: Source,
    shape_fn: Callable[[tuple[int, ...]], tuple[int, ...] | int],
    fn: Callable[..., Any],
) -> Traverse:
    """Repa's ``traverse``: new shape ``shape_fn(x.shape)`` (evaluated now) and elements
    ``fn(get, *index)``, where ``get(*j)`` reads ``x`` at ``j``."""
    return Traverse(x, _check_shape(shape_fn(_shape(x))), fn)


def reshape(x: Source, shape: tuple[int, ...] | int) -> Reshape:
    """``x`` with a new shape of the same size (row-major order)."""
    new = _check_shape(shape)
    old = _shape(x)
    if math.prod(new) != math.prod(old):
        raise OffloadError(f"cannot reshape an array of shape {old} into {new}")
    return Reshape(x, new)


def _shape(x: Source) -> tuple[int, ...]:
    if isinstance(x, Delayed):
        return x.shape
    shape = getattr(x, "shape", None)
    if shape is None or not hasattr(x, "dtype"):
        raise OffloadError(
            f"a delayed array is built from arrays or delayed arrays, not {type(x).__name__}"
        )
    return tuple(int(n) for n in shape)


def _check_shape(shape: tuple[int, ...] | int) -> tuple[int, ...]:
    if isinstance(shape, int):
        shape = (shape,)
    try:
        out = tuple(int(n) for n in shape)
    except TypeError:
        raise OffloadError(f"a shape is a tuple of ints, not {shape!r}") from None
    if any(n < 0 for n in out):
        raise OffloadError(f"a shape cannot have negative extents: {out}")
    return out


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
