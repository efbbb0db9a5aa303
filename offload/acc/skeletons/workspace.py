"""Scratch arrays a skeleton keeps between its launches, one set per host thread and
stream.

A kernel whose blocks hand work to the last one to finish (the spread fold tail,
``fold_src``) needs a counter that is zero when it starts, and resets it itself; and it
writes its blocks' partials to a scratch array; the one-pass scan (``scan_onepass_src``)
its tiles' statuses, totals and prefixes and its counters. Allocating and zeroing them on
every call would cost a launch of its own; so they are made once and kept, keyed by what
makes two launches safe to share them: launches queued on one stream run one after
another, so they share; launches on two streams (or from two host threads: CuPy's
per-thread default stream has one address in every thread) may run at once, so they get
their own.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from offload.acc.skeletons.build import xp_for

KEEP = 64
"""Sets of scratch arrays kept (the least recently used is dropped: a later launch on
its stream makes a new one; one in flight keeps its memory, as CuPy's pool is ordered
per stream)."""

T = TypeVar("T")

_SETS: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
_LOCK = threading.Lock()


def stream_key(target: str) -> tuple[int, int]:
    """(host thread, stream) of the launches made now on ``target``."""
    stream = 0
    if target == "gpu":
        stream = int(xp_for(target).cuda.get_current_stream().ptr)
    return (threading.get_ident(), stream)


def scratch(
    target: str, rows: int, width: int, dtypes: Sequence[np.dtype[Any]]
) -> tuple[tuple[Any, ...], list[Any], Any]:
    """(key, one ``(rows, width)`` array per dtype, a zeroed int32 counter per row) for
    the launches made now on ``target`` (module docstring). The counter must be zero
    again when the launch that uses it ends."""
    spec = ("rows", rows, width, tuple(np.dtype(d).str for d in dtypes))

    def make() -> tuple[list[Any], Any]:
        xp = xp_for(target)
        return [xp.empty((rows, width), d) for d in dtypes], xp.zeros(rows, np.int32)

    key, (ws, count) = kept(target, spec, make)
    return key, ws, count


def kept(target: str, spec: tuple[Any, ...], make: Callable[[], T]) -> tuple[tuple[Any, ...], T]:
    """(key, the set ``make`` makes) for the launches made now on ``target``: made on the
    first call with ``spec`` (what the set's sizes and kinds depend on) on this host
    thread and stream, the same set after that (module docstring)."""
    key = (target, *stream_key(target), *spec)
    with _LOCK:
        have = _SETS.get(key)
        if have is not None:
            _SETS.move_to_end(key)
            return key, have
    made = make()
    with _LOCK:
        _SETS[key] = made
        while len(_SETS) > KEEP:
            _SETS.popitem(last=False)
    return key, made


def discard(key: tuple[Any, ...]) -> None:
    """Forget the set ``key`` names (a launch that used it failed: its counter may not be
    zero); the next launch makes a new one."""
    with _LOCK:
        _SETS.pop(key, None)
