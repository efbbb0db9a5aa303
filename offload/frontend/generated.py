"""Python functions made from source text that offload writes itself, compiled by the
frontend like a user's own.

The frontend reads a function's source through ``linecache`` from its code object's file
name, and the language has no ``*args``: a wrapper that must take one parameter per axis
or per tuple component (an index function at shifted indices, a fold continued over a
tuple of any width) is written out for the arity it needs. ``factory`` compiles such text
once, under a file name of its own (``<offload-generated NAME>``) registered in
``linecache``, so ``inspect`` and the frontend find it as they find a file's; every call
of the factory then makes a closure of the same code (one compilation for all).
"""

from __future__ import annotations

import hashlib
import linecache
from collections.abc import Callable
from typing import Any

_FACTORIES: dict[str, Callable[..., Any]] = {}


def factory(name: str, text: str) -> Callable[..., Any]:
    """The function ``name`` that ``text`` defines at its top level (a factory that
    returns the wrapper as a closure of its arguments), compiled once per text."""
    made = _FACTORIES.get(text)
    if made is None:
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        filename = f"<offload-generated {name} {digest}>"  # (the same in every process)
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        space: dict[str, Any] = {"__name__": "offload.generated"}
        exec(compile(text, filename, "exec"), space)
        made = space[name]
        _FACTORIES[text] = made
    return made


def params(prefix: str, count: int) -> str:
    """``"p0, p1, ..."``: ``count`` names with ``prefix``."""
    return ", ".join(f"{prefix}{k}" for k in range(count))


def shifted(rank: int) -> Callable[..., Any]:
    """The factory ``make(ix, at)`` of an index function of ``rank`` parameters that calls
    ``ix`` at its indices plus the captured tuple ``at`` (a chunk's or block's offset:
    a kernel argument, read at each call, so one lowering serves every offset)."""
    moved = ", ".join(f"i{k} + at[{k}]" for k in range(rank))
    return factory(
        "make",
        "def make(ix, at):\n"
        f"    def shifted({params('i', rank)}):\n"
        f"        return ix({moved})\n\n"
        "    return shifted\n",
    )
