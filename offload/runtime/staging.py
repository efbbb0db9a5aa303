"""Host-to-device copies at the link's rate: pageable host memory staged through pinned
buffers by several host threads.

One thread copies pageable memory at a fraction of what the link moves (on the H100's
host: pageable H2D 6.2 to 8.7 GB/s, pinned 53 GB/s), so large host arrays go through
pinned memory, copied there by every core the process may use (``copy_jobs``). The
streamed pipeline (``offload.stream.execute``) stages its chunks this way through one
large ``PinnedArena``; a kernel's captured host array in device mode (``to_device``, from
``offload.runtime.memory.input_view``) through a small ring of pinned pieces: the host
threads fill piece ``k + 1`` while the DMA engine copies piece ``k`` in.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

H2D, D2H = 1, 2
"""``cudaMemcpyKind`` values."""


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # (not Linux)
        return os.cpu_count() or 1


HOST_THREADS = max(1, min(32, _cores()))
"""Threads that stage pageable host memory through the pinned buffers: every core the
process may run on. The GPU works from the pinned buffers on its own, so the host's part of
a streamed run is these copies, and they scale with the cores: on the H100's 16-core host,
a pageable-to-pinned copy measured 11.7 GB/s on one thread, 50 on 8 and 61 on 16, and a
copy into fresh (never written) result memory 3.4, 18 and 28 GB/s
(``benchmarks/lab/host_link.py``)."""

COPY_PIECE = 1 << 22
"""The fewest bytes one thread copies (smaller copies are not worth a thread)."""


def copy_jobs(pool: ThreadPoolExecutor, dst: np.ndarray[Any, Any], src: Any) -> list[Future[Any]]:
    """``dst[...] = src`` split along the leading axis into at most ``HOST_THREADS`` parts,
    submitted to ``pool`` (NumPy releases the GIL while it copies); the caller waits."""
    n = dst.shape[0] if dst.ndim else 0
    parts = min(HOST_THREADS, n, max(1, dst.nbytes // COPY_PIECE))
    if parts <= 1:
        return [pool.submit(np.copyto, dst, src)]
    step = -(-n // parts)
    return [
        pool.submit(np.copyto, dst[lo : lo + step], src[lo : lo + step]) for lo in range(0, n, step)
    ]


HOST_PINNED = 1
"""``cudaMemoryTypeHost``: page-locked host memory (``cudaPointerAttributes.type``)."""


def pinned(cp: Any, x: Any) -> bool:
    """Whether ``x`` is a NumPy array in page-locked host memory (``cupyx.empty_pinned``,
    ``cudaHostRegister``, a pinned torch tensor's view): its first and last bytes are
    (a copy from or into it needs no staging). A wrong guess costs speed only: the
    driver copies pageable memory correctly, through its own staging."""
    if type(x) is not np.ndarray or x.nbytes == 0 or not x.flags.c_contiguous:
        return False
    lo = x.ctypes.data
    try:
        return all(
            getattr(cp.cuda.runtime.pointerGetAttributes(at), "type", 0) == HOST_PINNED
            for at in (lo, lo + x.nbytes - 1)
        )
    except Exception:  # (an old driver or CuPy: stage, as for pageable memory)
        return False


def wait(jobs: Sequence[Future[Any]]) -> None:
    """Wait for every job; the first failure is raised."""
    for job in jobs:
        job.result()


class PinnedArena:
    """One pinned host block, reused by every streamed run of the process and grown on
    demand (pinning gigabytes takes long: a cache, not per call). ``lock`` is held by the
    run using it: streamed GPU runs of one process take turns."""

    def __init__(self) -> None:
        self._mem: Any = None
        self._bytes = 0
        self.lock = threading.Lock()

    def release(self) -> None:
        """Unpin and free the block (the next run pins a new one)."""
        with self.lock:
            self._mem = None
            self._bytes = 0

    def get(self, cp: Any, nbytes: int) -> np.ndarray[Any, Any]:
        """At least ``nbytes`` pinned bytes as a uint8 array."""
        if nbytes > self._bytes:
            self._mem = None
            self._mem = cp.cuda.alloc_pinned_memory(nbytes)
            self._bytes = nbytes
        return np.frombuffer(self._mem, dtype=np.uint8, count=self._bytes)


PINNED = PinnedArena()


STAGE_MIN = 1 << 25
"""The smallest host array ``to_device`` stages (32 MiB); below it one pageable copy
costs less than waking the threads."""

PIECE = 1 << 26
"""Bytes of one pinned piece of the ring (64 MiB)."""

RING = 3
"""Pinned pieces in the ring: one filled by the host threads while the others are copied."""


class _Ring:
    """The pinned pieces (and the thread pool) of ``to_device``, made on first use; the
    event recorded after each piece's copy says when the piece may be written again."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pieces: list[np.ndarray[Any, Any]] = []
        self.events: list[Any] = []
        self.pool: ThreadPoolExecutor | None = None
        self.mem: Any = None

    def ready(self, cp: Any) -> ThreadPoolExecutor:
        if self.pool is None:
            mem = cp.cuda.alloc_pinned_memory(PIECE * RING)
            whole = np.frombuffer(mem, dtype=np.uint8, count=PIECE * RING)
            self.pieces = [whole[k * PIECE : (k + 1) * PIECE] for k in range(RING)]
            self.events = [None] * RING
            self.mem = mem
            self.pool = ThreadPoolExecutor(HOST_THREADS, thread_name_prefix="offload-stage")
        return self.pool


_RING = _Ring()


def stages(cp: Any, x: Any) -> bool:
    """Whether ``to_device`` stages ``x``: a C-contiguous host array of ``STAGE_MIN``
    bytes or more, on a host with more than one usable core, not already page-locked
    (the DMA engine reads that at the link's rate itself)."""
    return (
        isinstance(x, np.ndarray)
        and x.nbytes >= STAGE_MIN
        and x.flags.c_contiguous
        and HOST_THREADS > 1
        and not pinned(cp, x)
    )


def to_device(cp: Any, x: np.ndarray[Any, Any], stream_ptr: int) -> Any:
    """A new CuPy array holding ``x`` (a C-contiguous host array), its copy queued on
    the stream ``stream_ptr``: ``x`` is read before this returns, the device copy is
    complete for work queued after it on that stream."""
    out = cp.empty(x.shape, x.dtype)
    src = x.reshape(-1).view(np.uint8)
    with _RING.lock:
        pool = _RING.ready(cp)
        for k, lo in enumerate(range(0, src.nbytes, PIECE)):
            slot = k % RING
            event = _RING.events[slot]
            if event is not None:
                event.synchronize()  # the DMA that last read this piece is done
            n = min(PIECE, src.nbytes - lo)
            piece = _RING.pieces[slot][:n]
            wait(copy_jobs(pool, piece, src[lo : lo + n]))
            cp.cuda.runtime.memcpyAsync(out.data.ptr + lo, piece.ctypes.data, n, H2D, stream_ptr)
            event = cp.cuda.Event(block=False, disable_timing=True)
            cp.cuda.runtime.eventRecord(event.ptr, stream_ptr)
            _RING.events[slot] = event
    return out
