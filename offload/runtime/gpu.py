"""Lazy access to CuPy and the current device (CuPy is an optional dependency).

Nothing in offload imports CuPy at module level: CI and CPU-only users never need it. Every
GPU path goes through ``load_cupy()``, which turns a missing CuPy, driver or device into
``GPUUnavailable`` with a hint.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any

from offload.diagnostics import GPUUnavailable

_HINT = (
    "use compute_p for the CPU, or set OFFLOAD_GPU_SIMULATOR=1 (or ol.config.gpu_simulator = "
    "True) to run compute_g under numba's CUDA simulator"
)


@functools.cache
def load_cupy() -> Any:
    """The ``cupy`` module, once a CUDA device is known to be usable."""
    try:
        import cupy
    except ImportError as exc:
        raise GPUUnavailable(
            f"compute_g needs CuPy (pip install 'offload[gpu]'): {exc}\nhint: {_HINT}"
        ) from None
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # CUDARuntimeError: no driver / no device
        raise GPUUnavailable(f"no usable CUDA device: {exc}\nhint: {_HINT}") from None
    if count == 0:
        raise GPUUnavailable(f"no CUDA device found\nhint: {_HINT}")
    return cupy


@dataclass(frozen=True)
class DeviceInfo:
    """What launch configuration and the cache key need to know about the device."""

    name: str
    cc: tuple[int, int]
    sm_count: int
    max_threads_per_sm: int
    regs_per_sm: int
    total_memory: int


_THREAD = threading.local()


def bind_thread(cp: Any) -> None:
    """Make the calling thread's CUDA device current for the driver API, once per thread.

    A thread that has not called the CUDA runtime has no current context, so a
    ``cuLaunchKernel`` from it fails with ``CUDA_ERROR_INVALID_CONTEXT``; a warm launch
    (pooled results, cached arguments) may be the first CUDA call a worker thread makes
    (a Dask task, a ``ThreadPoolExecutor``). ``setDevice`` binds the device's primary
    context, which is where CuPy loads offload's kernels."""
    if getattr(_THREAD, "bound", False):
        return
    cp.cuda.runtime.setDevice(cp.cuda.runtime.getDevice())
    _THREAD.bound = True


@functools.cache
def device_info(device_id: int = 0) -> DeviceInfo:
    """Facts about CUDA device ``device_id`` (cached: they do not change in a process)."""
    cp = load_cupy()
    props = cp.cuda.runtime.getDeviceProperties(device_id)
    name = props["name"]
    return DeviceInfo(
        name=name.decode() if isinstance(name, bytes) else str(name),
        cc=(int(props["major"]), int(props["minor"])),
        sm_count=int(props["multiProcessorCount"]),
        max_threads_per_sm=int(props["maxThreadsPerMultiProcessor"]),
        regs_per_sm=int(props["regsPerMultiprocessor"]),
        total_memory=int(props["totalGlobalMem"]),
    )
