"""Device mode memory: a size-class pool of raw device blocks (Accelerate's "nursery").

Blocks are rounded up to a size class (powers of two split in quarters, so at most 25%
slack) and returned to the class's free list when the array using them dies. On
out-of-memory the pool releases every cached block (its own and CuPy's) and retries once;
a second failure is a ``MemoryError`` naming the sizes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

MIN_BLOCK = 512


def size_class(nbytes: int) -> int:
    """The block size serving a request: ``MIN_BLOCK`` or 1, 1.25, 1.5, 1.75 x 2**k."""
    if nbytes <= MIN_BLOCK:
        return MIN_BLOCK
    top = 1 << (nbytes - 1).bit_length()  # next power of two
    quarter = top // 8  # top/2 is the previous power; its quarters step by top/8
    return min(top, -(-nbytes // quarter) * quarter)


class _Lease:
    """Owner of one pooled block while an array uses it; returns it to the pool on death
    (``__del__``: a ``weakref.finalize`` per result costs microseconds on the warm path)."""

    __slots__ = ("__weakref__", "mem", "pool", "size")

    def __init__(self, pool: DevicePool, mem: Any, size: int) -> None:
        self.mem = mem
        self.pool = pool
        self.size = size

    def __del__(self) -> None:
        self.pool._release(self.mem, self.size)


class DevicePool:
    """Size-class free lists of device allocations; ``empty`` hands out CuPy arrays."""

    def __init__(self, cp: Any) -> None:
        self._cp = cp
        # Bound once: ``empty`` runs on every warm device-mode call, and each of these is
        # a chain of attribute lookups through CuPy's modules.
        self._unowned = cp.cuda.memory.UnownedMemory
        self._pointer = cp.cuda.memory.MemoryPointer
        self._ndarray = cp.ndarray
        self._free: dict[int, list[Any]] = defaultdict(list)
        self.cached_bytes = 0
        """Bytes held in free lists (not in use)."""
        self.hits = 0
        self.misses = 0

    def _release(self, mem: Any, size: int) -> None:
        self._free[size].append(mem)
        self.cached_bytes += size

    def _malloc(self, size: int) -> Any:
        cp = self._cp
        oom = (cp.cuda.memory.OutOfMemoryError, cp.cuda.runtime.CUDARuntimeError)
        try:
            return cp.cuda.memory.Memory(size)
        except oom:
            self.free_all()
            cp.get_default_memory_pool().free_all_blocks()
        try:
            return cp.cuda.memory.Memory(size)
        except oom:
            free, total = (int(v) for v in cp.cuda.runtime.memGetInfo())
            raise MemoryError(
                f"compute_g (device mode): cannot allocate {size / 2**20:.1f} MiB on the "
                f"device ({free / 2**20:.1f} MiB free of {total / 2**20:.1f} MiB) even after "
                "releasing cached blocks"
            ) from None

    def empty(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
        """A C-contiguous CuPy array of ``shape`` on a pooled block."""
        nbytes = math.prod(shape) * dtype.itemsize
        size = size_class(nbytes)
        free = self._free.get(size)
        if free:
            mem = free.pop()
            self.cached_bytes -= size
            self.hits += 1
        else:
            mem = self._malloc(size)
            self.misses += 1
        unowned = self._unowned(int(mem.ptr), size, _Lease(self, mem, size))
        return self._ndarray(shape, dtype, self._pointer(unowned, 0))

    def free_all(self) -> None:
        """Release every cached block to the driver."""
        self._free.clear()
        self.cached_bytes = 0
