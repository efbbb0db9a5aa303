"""A tiny stand-in for the parts of CuPy the runtime uses, for fault injection on CI."""

from __future__ import annotations

import types

import numpy as np


class OutOfMemoryError(Exception):
    pass


class CUDARuntimeError(Exception):
    pass


class FakeMemory:
    """Device memory backed by a host buffer (so that addresses are real)."""

    def __init__(self, size: int) -> None:
        self.buf = np.zeros(max(size, 1), dtype=np.uint8)
        self.ptr = self.buf.ctypes.data
        self.size = size


def make(free: int = 1 << 34, total: int = 1 << 35, fail_mallocs: int = 0):
    """A fake ``cupy`` module; the first ``fail_mallocs`` device allocations raise OOM."""
    state = {"fail": fail_mallocs, "mallocs": 0, "pool_freed": 0, "prefetches": 0}

    def memory(size):
        state["mallocs"] += 1
        if state["fail"] > 0:
            state["fail"] -= 1
            raise OutOfMemoryError(size)
        return FakeMemory(size)

    class Pool:
        def free_all_blocks(self):
            state["pool_freed"] += 1

    class MemoryPool:
        """CuPy's arena pool: ``malloc`` gives a pointer object owning its block."""

        def __init__(self):
            self.live: list[int] = []

        def malloc(self, size):
            mem = memory(size)
            self.live.append(size)
            return types.SimpleNamespace(mem=mem, ptr=mem.ptr)

        def free_all_blocks(self):
            state["private_freed"] = state.get("private_freed", 0) + 1

        def free_bytes(self):
            return 0

        def used_bytes(self):
            return sum(self.live)

    def prefetch(ptr, n, dev, stream):
        state["prefetches"] += 1

    runtime = types.SimpleNamespace(
        memGetInfo=lambda: (free, total),
        memPrefetchAsync=prefetch,
        CUDARuntimeError=CUDARuntimeError,
        getDeviceCount=lambda: 1,
        getDevice=lambda: 0,
        setDevice=lambda d: state.__setitem__("bound", state.get("bound", 0) + 1),
    )
    mem_mod = types.SimpleNamespace(
        OutOfMemoryError=OutOfMemoryError,
        Memory=memory,
        UnownedMemory=lambda ptr, size, owner: types.SimpleNamespace(ptr=ptr, owner=owner),
        MemoryPointer=lambda mem, off: types.SimpleNamespace(mem=mem, ptr=mem.ptr + off),
    )
    cuda = types.SimpleNamespace(
        runtime=runtime,
        memory=mem_mod,
        malloc_managed=lambda n: FakeMemory(n),
        MemoryPool=MemoryPool,
    )

    def ndarray(shape, dtype, memptr):
        return types.SimpleNamespace(shape=shape, dtype=dtype, memptr=memptr)

    cp = types.SimpleNamespace(
        cuda=cuda,
        ndarray=ndarray,
        get_default_memory_pool=Pool,
        asarray=lambda x: np.array(x, copy=True),
    )
    return cp, state
