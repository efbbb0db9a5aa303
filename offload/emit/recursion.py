"""Room for recursion that grows with a kernel's size: the structuriser's (a few frames per
nested block) and numba's compile of the emitted source (its SSA pass looks for a
variable's definition up the dominator tree recursively, and a flattened ``elif`` chain
adds a few blocks to that tree's depth per arm).

Python 3.11+ keeps Python-to-Python calls off the C stack, so a higher limit costs heap
frames only. The limit is process-wide: it is raised for the duration and put back unless
another thread changed it meanwhile.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

FRAMES_PER_LINE = 2
"""Frames numba's compile may need per line of kernel source: a generous bound (a 300-arm
chain makes a kernel of about 6,000 lines, whose compile needs about 1,000 frames)."""


@contextlib.contextmanager
def recursion_room(frames: int) -> Iterator[None]:
    """Python's recursion limit raised by ``frames`` for the duration."""
    old = sys.getrecursionlimit()
    need = old + max(0, frames)
    sys.setrecursionlimit(need)
    try:
        yield
    finally:
        if sys.getrecursionlimit() == need:  # another thread may have changed it meanwhile
            sys.setrecursionlimit(old)


def compile_room(source: str) -> int:
    """The frames to add for numba's compile of the kernel ``source``."""
    return FRAMES_PER_LINE * source.count("\n")


def from_recursion(exc: BaseException) -> bool:
    """Whether ``exc`` (a numba or NVVM error) wraps a ``RecursionError``."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, RecursionError):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False
