"""The GPU side of streaming: the memory budget, the measured link rate, the backend.

The pipeline launches on a device-mode GPU backend of its own (asynchronous launches on
the current stream) whatever ``ol.config.memory`` says, since it owns its buffers.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from offload.backend import Backend
from offload.config import config
from offload.targets import backend_named

UNLIMITED = 1 << 62
"""The budget of a target without device memory (the simulator) when no limit is set."""


def device_budget(backend_name: str) -> int:
    """The device memory a streamed run may use: ``ol.config.device_memory_limit`` if set,
    else the GPU's free memory less a safety margin (``UNLIMITED`` for the simulator)."""
    limit = config.device_memory_limit
    if limit is not None:
        return int(limit)
    if backend_name == "gpu-sim":
        return UNLIMITED
    from offload.runtime.gpu import load_cupy
    from offload.runtime.memory import safety_margin

    cp = load_cupy()
    free, total = (int(v) for v in cp.cuda.runtime.memGetInfo())
    return max(free - safety_margin(total), 0)


_RATE: dict[str, float] = {}
"""The measured pinned host-to-device rate (bytes/s) of this process's GPU (a cache)."""


def transfer_rate(cp: Any) -> float:
    """Pinned host-to-device bytes per second, measured once per process (64 MiB, best of
    three): bounds the chunk size (``offload.stream.plan``)."""
    rate = _RATE.get("h2d")
    if rate is None:
        nbytes = 64 << 20
        host = np.frombuffer(cp.cuda.alloc_pinned_memory(nbytes), np.uint8, nbytes)
        dev = cp.empty(nbytes, np.uint8)
        best = math.inf
        for _ in range(3):
            start = time.perf_counter()
            cp.cuda.runtime.memcpy(dev.data.ptr, host.ctypes.data, nbytes, 1)
            best = min(best, time.perf_counter() - start)
        rate = nbytes / best
        _RATE["h2d"] = rate
    return rate


SLOTS = 3
"""Chunks in flight on the GPU: one being copied in, one computed, one copied back."""


def stream_backend() -> Backend:
    """The backend streamed calls run on: the simulator's, or the device-mode GPU's."""
    if config.gpu_simulator:
        return backend_named("gpu-sim")
    return device_backend()


def stream_backend_name() -> str:
    """``stream_backend().name``, without making the backend (plans need only the name)."""
    return "gpu-sim" if config.gpu_simulator else "gpu"


_DEVICE: dict[str, Backend] = {}


def device_backend() -> Backend:
    """A device-mode GPU backend (asynchronous launches on the current stream), whatever
    ``ol.config.memory`` says: the pipeline owns its buffers and streams."""
    backend = _DEVICE.get("device")
    if backend is None:
        from offload.ptx.backend import GPUBackend

        backend = GPUBackend(mode="device", cache_dir=config.cache_dir)
        _DEVICE["device"] = backend
    return backend
