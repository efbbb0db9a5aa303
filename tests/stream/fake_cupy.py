"""A stand-in for the few CuPy calls of ``offload.stream.execute.run_gpu`` and
``offload.runtime.staging.to_device``, over host memory,
with CUDA's ordering: every copy and launch queued on a stream runs only when an event
recorded after it (or the stream) is synchronised. A pipeline that read a result, or
reused a staging buffer, before the work writing or reading it had run would see stale
bytes here as on a GPU."""

from __future__ import annotations

import contextlib
import ctypes
import itertools
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np


class DevArray(np.ndarray):
    """A "device" array: host memory with CuPy's ``.data.ptr``."""

    @property
    def data(self) -> Any:  # type: ignore[override]
        return SimpleNamespace(ptr=self.ctypes.data)


class Stream:
    _ids = itertools.count(1)
    current: Stream | None = None
    by_ptr: dict[int, Stream] = {}

    def __init__(self, non_blocking: bool = False) -> None:
        self.ptr = next(self._ids)
        self.queue: list[Callable[[], None]] = []
        self.done = 0
        Stream.by_ptr[self.ptr] = self

    def __enter__(self) -> Stream:
        Stream.current = self
        return self

    def __exit__(self, *exc: object) -> None:
        Stream.current = None

    def run_until(self, mark: int) -> None:
        while self.done < mark:
            self.queue[self.done]()
            self.done += 1

    def record(self) -> Any:
        mark = len(self.queue)
        return SimpleNamespace(synchronize=lambda: self.run_until(mark))

    def synchronize(self) -> None:
        self.run_until(len(self.queue))


def _memcpy_async(dst: int, src: int, nbytes: int, kind: int, stream: int) -> None:
    Stream.by_ptr[stream].queue.append(lambda: ctypes.memmove(dst, src, nbytes))


class Deferred:
    """A kernel whose launches are queued on the current stream (then run on host views)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.launches = 0

    def launch(self, shape: Any, outs: Any, captures: Any) -> None:
        stream = Stream.current
        assert stream is not None, "a pipeline launch outside its stream"
        outs = [np.asarray(o) for o in outs]
        captures = [np.asarray(c) if isinstance(c, DevArray) else c for c in captures]
        self.launches += 1
        stream.queue.append(lambda: self.kernel.launch(shape, outs, captures))


def _empty(shape: Any, dtype: Any) -> DevArray:
    """Uninitialised device memory: filled with a byte pattern no result has."""
    dims = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    count = int(np.prod(dims, dtype=np.int64))
    raw = np.full(count * np.dtype(dtype).itemsize, 0xAB, np.uint8)
    return raw.view(np.dtype(dtype)).reshape(dims).view(DevArray)


class Event:
    """A CUDA event: ``eventRecord`` marks the end of a stream's queue so far, and
    ``synchronize`` runs the stream's work up to that mark."""

    by_ptr: dict[int, Event] = {}
    _ids = itertools.count(1)

    def __init__(self, block: bool = False, disable_timing: bool = False) -> None:
        self.ptr = next(self._ids)
        self.mark: tuple[Stream, int] | None = None
        Event.by_ptr[self.ptr] = self

    def synchronize(self) -> None:
        if self.mark is not None:
            stream, mark = self.mark
            stream.run_until(mark)


def _event_record(event: int, stream: int) -> None:
    s = Stream.by_ptr[stream]
    Event.by_ptr[event].mark = (s, len(s.queue))


PINNED_RANGES: list[tuple[int, int]] = []
"""Host address ranges ``[lo, hi)`` the stand-in reports page-locked (``pin``)."""


def pin(x: np.ndarray) -> np.ndarray:
    """Report ``x``'s memory page-locked until ``unpin_all`` (a test's pinned array)."""
    PINNED_RANGES.append((x.ctypes.data, x.ctypes.data + x.nbytes))
    return x


def unpin_all() -> None:
    PINNED_RANGES.clear()


def _pointer_attributes(ptr: int) -> Any:
    inside = any(lo <= ptr < hi for lo, hi in PINNED_RANGES)
    return SimpleNamespace(type=1 if inside else 0)


def _asarray(x: Any) -> DevArray:
    return np.array(x).view(DevArray)


def _pool() -> Any:
    return SimpleNamespace(malloc=None, free_all_blocks=lambda: None)


cp = SimpleNamespace(
    empty=_empty,
    asarray=_asarray,
    cuda=SimpleNamespace(
        Stream=Stream,
        MemoryPool=_pool,
        using_allocator=lambda malloc: contextlib.nullcontext(),
        alloc_pinned_memory=lambda n: bytearray(b"\xcd" * n),
        Event=Event,
        runtime=SimpleNamespace(
            memcpyAsync=_memcpy_async,
            eventRecord=_event_record,
            pointerGetAttributes=_pointer_attributes,
        ),
    ),
)
"""The module-like object ``run_gpu`` takes as ``cp``."""
