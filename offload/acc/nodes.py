"""Structural nodes: element nodes whose element is another array's element at a remapped
index (no function of the user's, no loop). They fuse into everything and are cheap to
recompute, so the scheduler never materialises them (``graph.trivial``).

* ``Leaf(x)``: ``x`` itself (an array as a node: a materialised result);
* ``Zip(head, tail)``: a tuple of arrays as one tuple-valued array (struct of arrays);
* ``replicate``/``extend`` (Repa's ``extend``, Accelerate's ``replicate``), ``slice``
  with ``ALL`` for a kept axis, ``reverse`` (innermost axis), ``transpose``;
* ``generate``: ``from_function`` under Accelerate's name.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.acc.values import Item, items_key, lower_items, shape_of, to_items
from offload.delayed import Delayed, FromFunction, from_function
from offload.diagnostics import OffloadError
from offload.frontend.nodes import ElementLowering, Index, NodeFunction, NodePath
from offload.frontend.values import TupleVal, Val


class _All:
    """``ALL``: an axis kept whole in a ``slice``/``extend`` specification (Repa's ``All``)."""

    _instance: _All | None = None

    def __new__(cls) -> _All:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ALL"


ALL = _All()


@dataclass(frozen=True, eq=False)
class Leaf(Delayed):
    """An array as a node (its elements as they are)."""

    x: Any

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return shape_of(self.x)

    def functions(self) -> tuple[NodeFunction, ...]:
        return ()

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("x", self.x),)

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        return lo.element(self.x, (*path, ("attr", "x")), idx)


@dataclass(frozen=True, eq=False)
class Zip(Delayed):
    """``(head[i], *tail[i])``: a tuple of arrays of one shape read as one array of
    tuples (``tail`` another ``Zip`` or ``None``)."""

    head: Any
    tail: Zip | None

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return shape_of(self.head)

    def functions(self) -> tuple[NodeFunction, ...]:
        return ()

    def sources(self) -> tuple[tuple[str, object], ...]:
        out: tuple[tuple[str, object], ...] = (("head", self.head),)
        return out if self.tail is None else (*out, ("tail", self.tail))

    def static_key(self) -> tuple[object, ...]:
        return (self.tail is None,)

    def heads(self) -> tuple[Any, ...]:
        """The components, in order (each ``head`` down the ``tail`` chain)."""
        out: list[Any] = []
        cur: Zip | None = self
        while cur is not None:
            out.append(cur.head)
            cur = cur.tail
        return tuple(out)

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        first = lo.element(self.head, (*path, ("attr", "head")), idx)
        if self.tail is None:
            return TupleVal((first,))
        rest = lo.element(self.tail, (*path, ("attr", "tail")), idx)
        assert isinstance(rest, TupleVal)
        return TupleVal((first, *rest.items))


def as_source(a: Any, what: str = "the array") -> Any:
    """A source as nodes take it: an array or delayed array as it is, a tuple of them
    (struct of arrays) as a ``Zip``."""
    if isinstance(a, tuple | list):
        if not a:
            raise TypeError(f"{what} cannot be an empty tuple")
        numbers = [x for x in a if isinstance(x, int | float | complex | np.generic)]
        if numbers:
            kind = type(a).__name__
            raise OffloadError(
                f"{what} is a {kind} holding {type(numbers[0]).__name__} values: a collective "
                "reads arrays or delayed arrays (a tuple of them is a struct of arrays); "
                f"convert the {kind} with np.asarray first"
            )
        shapes = {shape_of(x) for x in a}
        if len(shapes) != 1:
            raise ValueError(f"the arrays of a tuple must have one shape, got {sorted(shapes)}")
        out: Zip | None = None
        for x in reversed(a):
            out = Zip(x, out)
        return out
    shape_of(a)
    return a


def as_arrays_source(result: Any) -> Any:
    """A materialised result (an array, or a tuple of arrays) as a source."""
    return as_source(result) if isinstance(result, tuple) else result


@dataclass(frozen=True, eq=False)
class Extend(Delayed):
    """``x`` with new axes: ``spec`` has one entry per result axis, ``ALL`` for the next
    axis of ``x``, an int for a new axis of that extent (the element is repeated)."""

    spec: tuple[object, ...]
    x: Any

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        src = iter(shape_of(self.x))
        return tuple(next(src) if s is ALL else int(s) for s in self.spec)  # type: ignore[call-overload]

    def functions(self) -> tuple[NodeFunction, ...]:
        return ()

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("x", self.x),)

    def static_key(self) -> tuple[object, ...]:
        return tuple(s is ALL for s in self.spec)

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        src = [i for i, s in zip(idx, self.spec, strict=True) if s is ALL]
        return lo.element(self.x, (*path, ("attr", "x")), src)


@dataclass(frozen=True, eq=False)
class Slice(Delayed):
    """``x`` with some axes fixed: ``spec`` has one entry per axis of ``x``, ``ALL`` for a
    kept axis, an index for a fixed one (held in ``fixed``, captured)."""

    x: Any
    spec: tuple[object, ...]
    fixed: object
    """The fixed indices (an ``Item`` chain, or ``None`` when every axis is kept)."""

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return tuple(n for n, s in zip(shape_of(self.x), self.spec, strict=True) if s is ALL)

    def refit(self) -> Slice:
        """This slice with its fixed indices taken anew against ``x``'s extents (``x`` was
        a filter, whose length the scheduler knows only once computed)."""
        return slice(self.x, self.spec)

    def functions(self) -> tuple[NodeFunction, ...]:
        return ()

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("x", self.x),)

    def static_key(self) -> tuple[object, ...]:
        return tuple(s is ALL for s in self.spec)

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        fixed: list[Any] = []
        if self.fixed is not None:
            t = lower_items(lo, self.fixed, (*path, ("attr", "fixed")))
            assert isinstance(t, TupleVal)
            fixed = list(t.items)
        kept = iter(idx)
        src = [next(kept) if s is ALL else fixed.pop(0) for s in self.spec]
        return lo.element(self.x, (*path, ("attr", "x")), src)


@dataclass(frozen=True, eq=False)
class Reverse(Delayed):
    """``x`` with its innermost axis reversed."""

    x: Any
    n: int
    """The innermost extent (captured)."""

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return shape_of(self.x)

    def refit(self) -> Reverse:
        """This node with ``n`` taken anew from ``x`` (see ``Slice.refit``)."""
        n = shape_of(self.x)[-1]
        return self if n == self.n else Reverse(self.x, n)

    def functions(self) -> tuple[NodeFunction, ...]:
        return ()

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("x", self.x),)

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        n = lo.captured(self.n, (*path, ("attr", "n")))
        assert not isinstance(n, TupleVal)
        last = lo.binop("sub", lo.binop("sub", n, lo.constant(1)), idx[-1])  # type: ignore[arg-type]
        return lo.element(self.x, (*path, ("attr", "x")), [*idx[:-1], last])


@dataclass(frozen=True, eq=False)
class Transpose(Delayed):
    """``x`` with its axes in reverse order (``numpy.transpose``)."""

    x: Any

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return shape_of(self.x)[::-1]

    def functions(self) -> tuple[NodeFunction, ...]:
        return ()

    def sources(self) -> tuple[tuple[str, object], ...]:
        return (("x", self.x),)

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        return lo.element(self.x, (*path, ("attr", "x")), list(idx)[::-1])


def _spec(spec: object, what: str) -> tuple[object, ...]:
    items = spec if isinstance(spec, tuple | list) else (spec,)
    out: list[object] = []
    for s in items:
        if s is ALL:
            out.append(s)
            continue
        if isinstance(s, bool):
            raise TypeError(f"{what} entries are ALL or ints, not {s!r}")
        try:
            out.append(operator.index(s))  # type: ignore[arg-type]
        except TypeError:
            raise TypeError(f"{what} entries are ALL or ints, not {s!r}") from None
    return tuple(out)


def extend(spec: Sequence[object] | object, x: Any) -> Extend:
    """Repa's ``extend``: ``spec`` names each result axis, ``ALL`` for the next axis of
    ``x`` (in order), an int ``k`` for a new axis of extent ``k`` along which ``x`` is
    repeated. ``extend((3, ALL), v)`` is three copies of the vector ``v`` as rows."""
    sp = _spec(spec, "an extend specification")
    x = as_source(x)
    n_all = builtins.sum(s is ALL for s in sp)
    if n_all != len(shape_of(x)):
        raise ValueError(
            f"the specification {sp!r} keeps {n_all} axes but the array has {len(shape_of(x))}"
        )
    if any(s is not ALL and s < 0 for s in sp):  # type: ignore[operator]
        raise ValueError(f"new axes need non-negative extents: {sp!r}")
    return Extend(sp, x)


def replicate(spec: Sequence[object] | object, x: Any) -> Extend:
    """Accelerate's ``replicate`` (the same as ``extend``)."""
    return extend(spec, x)


def slice(x: Any, spec: Sequence[object] | object) -> Slice:  # the Repa name
    """Repa's ``slice``: ``spec`` has one entry per axis of ``x``, ``ALL`` to keep the
    axis, an index (negative from the end, as Python) to fix it and drop it.
    ``slice(m, (2, ALL))`` is row 2 of the matrix ``m``."""
    sp = _spec(spec, "a slice specification")
    x = as_source(x)
    shape = shape_of(x)
    if len(sp) != len(shape):
        raise ValueError(
            f"the slice specification {sp!r} has {len(sp)} entries for an "
            f"array of {len(shape)} axes"
        )
    fixed: list[int] = []
    for s, n in zip(sp, shape, strict=True):
        if s is not ALL:
            k = int(s)  # type: ignore[call-overload]
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for an axis of extent {n}")
            fixed.append(k % n)
    return Slice(x, sp, to_items(tuple(fixed), "indices") if fixed else None)


def reverse(x: Any) -> Reverse:
    """``x`` with its innermost axis reversed (a vector read backwards)."""
    x = as_source(x)
    shape = shape_of(x)
    if not shape:
        raise ValueError("reverse needs an array of at least one axis")
    return Reverse(x, shape[-1])


def transpose(x: Any) -> Transpose:
    """``x`` with its axes reversed (the matrix transpose for rank 2)."""
    return Transpose(as_source(x))


def generate(shape: tuple[int, ...] | int, fn: Callable[..., Any]) -> FromFunction:
    """Accelerate's ``generate``: the array whose element at ``index`` is ``fn(*index)``
    (``from_function``)."""
    return from_function(shape, fn)


__all__ = [
    "ALL",
    "Extend",
    "Item",
    "Leaf",
    "Reverse",
    "Slice",
    "Transpose",
    "Zip",
    "as_source",
    "extend",
    "generate",
    "items_key",
    "replicate",
    "reverse",
    "slice",
    "transpose",
]
