"""Room for recursion that grows with a kernel's size: the structuriser's (a few frames per
nested block) and numba's compile of the emitted source (its SSA pass looks for a
variable's definition up the dominator tree recursively, and a flattened ``elif`` chain
adds a few blocks to that tree's depth per arm).

Python 3.11+ keeps Python-to-Python calls off the C stack, so a higher limit costs heap
frames only. The limit is process-wide and threads compile at once (Dask's threaded
scheduler): while any thread holds room, the limit is the one found when the first
entered plus the most room any holder asked for; when the last leaves, that first limit
is put back -- unless another caller (Hypothesis, a library) set the limit meanwhile:
then it is theirs, and left as it is.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import threading
from collections.abc import Iterator

FRAMES_PER_LINE = 2
"""Frames numba's compile may need per line of kernel source: a generous bound (a 300-arm
chain makes a kernel of about 6,000 lines, whose compile needs about 1,000 frames)."""


_LOCK = threading.Lock()
_HOLDERS: dict[int, int] = {}
"""Frames asked for, by holder."""
_BASE = [0]
"""The limit found when the first holder entered."""
_TOKENS = itertools.count()
_SET = [0]
"""The limit this module set last."""


@contextlib.contextmanager
def recursion_room(frames: int) -> Iterator[None]:
    """Python's recursion limit raised by ``frames`` for the duration."""
    token = next(_TOKENS)
    with _LOCK:
        if not _HOLDERS:
            _BASE[0] = sys.getrecursionlimit()
        _HOLDERS[token] = max(0, frames)
        _set(_BASE[0] + max(_HOLDERS.values()))
    try:
        yield
    finally:
        with _LOCK:
            del _HOLDERS[token]
            if sys.getrecursionlimit() == _SET[0]:  # else another caller set it since: theirs
                _set(_BASE[0] + max(_HOLDERS.values(), default=0))


def _set(limit: int) -> None:
    sys.setrecursionlimit(limit)
    _SET[0] = limit


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
