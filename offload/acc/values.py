"""Values a collective node holds besides its sources: neutral elements (``z``), extents,
fixed indices. Each is captured -- a kernel parameter re-read at every call -- never a
constant folded into the kernel, so a new ``z`` or a new size does not compile again.

A capture path steps through attributes only, so a tuple is held as a chain of ``Item``
cells (``head``, ``tail``); ``items_key`` is its structure, which the lowering depends on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.delayed import Delayed
from offload.diagnostics import OffloadError
from offload.frontend.captures import plain_shape
from offload.frontend.nodes import ElementLowering, NodePath
from offload.frontend.values import TupleVal, Val


@dataclass(frozen=True)
class Item:
    """One cell of a captured tuple: ``head`` (a number or a nested ``Item`` chain, for a
    nested tuple) and ``tail`` (the next cell, ``None`` at the end)."""

    head: object
    tail: Item | None


_NUMBER = (bool, int, float, np.bool_, np.integer, np.floating)


def to_items(value: object, what: str) -> object:
    """``value`` (a number or a non-empty, possibly nested, tuple of numbers) as held by a
    node: numbers as they are, tuples as ``Item`` chains. ``TypeError`` otherwise."""
    if isinstance(value, tuple):
        if not value:
            raise TypeError(f"{what} cannot be an empty tuple")
        out: Item | None = None
        for v in reversed(value):
            out = Item(to_items(v, what), out)
        return out
    if isinstance(value, _NUMBER):
        return value
    raise TypeError(f"{what} must be a number or a tuple of numbers, not {type(value).__name__}")


def from_items(value: object) -> object:
    """Inverse of ``to_items``."""
    if isinstance(value, Item):
        out: list[object] = []
        cur: Item | None = value
        while cur is not None:
            out.append(from_items(cur.head))
            cur = cur.tail
        return tuple(out)
    return value


def items_key(value: object) -> object:
    """The structure of a held value (``"s"`` for a number, a tuple of structures)."""
    if isinstance(value, Item):
        out: list[object] = []
        cur: Item | None = value
        while cur is not None:
            out.append(items_key(cur.head))
            cur = cur.tail
        return tuple(out)
    return "s"


def lower_items(lo: ElementLowering, value: object, path: NodePath) -> Val:
    """The captured value ``value`` (held at ``path``) in the kernel."""
    if isinstance(value, Item):
        vals: list[Val] = []
        cur: Item | None = value
        p = path
        while cur is not None:
            vals.append(lower_items(lo, cur.head, (*p, ("attr", "head"))))
            cur, p = cur.tail, (*p, ("attr", "tail"))
        return TupleVal(tuple(vals))
    return lo.captured(value, path)


def shape_of(x: Any) -> tuple[int, ...]:
    """The shape of a source: an array, a delayed array, or a tuple of them (their
    common shape)."""
    fast = plain_shape(x)
    if fast is not None:
        return fast
    if isinstance(x, Delayed):
        return tuple(x.shape)
    shape = getattr(x, "shape", None)
    if shape is None or not hasattr(x, "dtype"):
        raise OffloadError(f"a collective reads arrays or delayed arrays, not {type(x).__name__}")
    return tuple(int(n) for n in shape)


def size_of(shape: tuple[int, ...]) -> int:
    return math.prod(shape)
