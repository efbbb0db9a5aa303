"""The element functions a Dask permute's tasks wrap around the user's, compiled by offload
like the user's own (the language has no ``*args``: one wrapper per rank or arity).

* ``shifted``: the index function at *global* indices. A task permutes one block of the
  source, whose indices start at 0; the wrapper adds the block's offset ``at`` (a
  captured tuple of ints: a kernel argument, not a constant) before calling ``ix``.
* ``marked``: the combine over values that carry a flag "some element reached this
  cell". A block's partial result starts with every flag off; the first element to
  reach a cell is stored as it is, each later one combined with ``f(new, old)`` -- so a
  partial holds, per cell, exactly what ``compute_s`` would have combined from that
  block's elements, without ``defaults``.

Each worker thread keeps its own copy of a job's wrappers (``kept``): offload lowers a
function once per closure (its cache is keyed by the closure's cells) and re-reads the
captured values at every call, so setting the offset cell of the thread's own copy
before a permute costs no lowering, and no other thread can see the change.
"""

from __future__ import annotations

import threading
import types
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

Fn = Callable[..., Any]


def _shifted1(ix: Fn, at: tuple[int, ...]) -> Fn:
    def shifted(i0: int) -> Any:
        return ix(i0 + at[0])

    return shifted


def _shifted2(ix: Fn, at: tuple[int, ...]) -> Fn:
    def shifted(i0: int, i1: int) -> Any:
        return ix(i0 + at[0], i1 + at[1])

    return shifted


def _shifted3(ix: Fn, at: tuple[int, ...]) -> Fn:
    def shifted(i0: int, i1: int, i2: int) -> Any:
        return ix(i0 + at[0], i1 + at[1], i2 + at[2])

    return shifted


def _shifted4(ix: Fn, at: tuple[int, ...]) -> Fn:
    def shifted(i0: int, i1: int, i2: int, i3: int) -> Any:
        return ix(i0 + at[0], i1 + at[1], i2 + at[2], i3 + at[3])

    return shifted


SHIFTED: dict[int, Callable[[Fn, tuple[int, ...]], Fn]] = {
    1: _shifted1,
    2: _shifted2,
    3: _shifted3,
    4: _shifted4,
}
"""Per source rank, the factory of ``shifted``."""


def _marked1(f: Fn) -> Fn:
    def marked(new: Any, old: Any) -> Any:
        v, _ = new
        w, reached = old
        if reached:
            return f(v, w), True
        return v, True

    return marked


def _marked2(f: Fn) -> Fn:
    def marked(new: Any, old: Any) -> Any:
        v0, v1, _ = new
        w0, w1, reached = old
        if reached:
            r0, r1 = f((v0, v1), (w0, w1))
            return r0, r1, True
        return v0, v1, True

    return marked


def _marked3(f: Fn) -> Fn:
    def marked(new: Any, old: Any) -> Any:
        v0, v1, v2, _ = new
        w0, w1, w2, reached = old
        if reached:
            r0, r1, r2 = f((v0, v1, v2), (w0, w1, w2))
            return r0, r1, r2, True
        return v0, v1, v2, True

    return marked


def _marked4(f: Fn) -> Fn:
    def marked(new: Any, old: Any) -> Any:
        v0, v1, v2, v3, _ = new
        w0, w1, w2, w3, reached = old
        if reached:
            r0, r1, r2, r3 = f((v0, v1, v2, v3), (w0, w1, w2, w3))
            return r0, r1, r2, r3, True
        return v0, v1, v2, v3, True

    return marked


MARKED: dict[int, Callable[[Fn], Fn]] = {1: _marked1, 2: _marked2, 3: _marked3, 4: _marked4}
"""Per number of components of the values, the factory of ``marked``."""


def same_index(i: int) -> int:
    """The identity index function (the combine of two partials, cell by cell)."""
    return i


KEPT_PER_THREAD = 64
"""Wrappers a thread keeps (least recently used dropped)."""
_LOCAL = threading.local()


def kept(key: tuple[str, ...], make: Callable[[], Fn]) -> Fn:
    """This thread's wrapper ``key``, made by ``make`` the first time (module docstring)."""
    cache: OrderedDict[tuple[str, ...], Fn] | None = getattr(_LOCAL, "wrappers", None)
    if cache is None:
        cache = _LOCAL.wrappers = OrderedDict()
    fn = cache.get(key)
    if fn is None:
        fn = cache[key] = make()
        while len(cache) > KEPT_PER_THREAD:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return fn


def set_offset(fn: Fn, at: tuple[int, ...]) -> Fn:
    """``fn`` (a ``shifted`` wrapper) with its captured offset set to ``at``."""
    assert isinstance(fn, types.FunctionType) and fn.__closure__ is not None
    cell = fn.__closure__[fn.__code__.co_freevars.index("at")]
    cell.cell_contents = at
    return fn
