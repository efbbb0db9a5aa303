"""The element functions a Dask permute's tasks wrap around the user's, compiled by offload
like the user's own (the language has no ``*args``: each is written out for the rank or
arity it serves, ``offload.frontend.generated``).

* ``shifted`` (``offload.frontend.generated.shifted``, shared with streaming): the index
  function at *global* indices. A task permutes one block of the source, whose indices
  start at 0; the wrapper adds the block's offset ``at`` (a captured tuple of ints: a
  kernel argument, not a constant) before calling ``ix``.
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

from offload.frontend import generated

Fn = Callable[..., Any]


def marked(m: int) -> Callable[[Fn], Fn]:
    """The factory of ``marked`` for values of ``m`` components: ``make(f)``."""
    v, w, r = (generated.params(p, m) for p in ("v", "w", "r"))
    pack = (lambda x: x) if m == 1 else (lambda x: f"({x})")
    return generated.factory(
        "make",
        "def make(f):\n"
        "    def marked(new, old):\n"
        f"        {v}, _ = new\n"
        f"        {w}, reached = old\n"
        "        if reached:\n"
        f"            {r} = f({pack(v)}, {pack(w)})\n"
        f"            return {r}, True\n"
        f"        return {v}, True\n\n"
        "    return marked\n",
    )


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
