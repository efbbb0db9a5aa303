"""Memory faults and the no-GPU path, provoked with a fake CuPy (CI has no GPU)."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

from offload.diagnostics import GPUUnavailable, OffloadError
from offload.runtime import gpu
from offload.runtime.memory import (
    FrozenTable,
    ManagedPool,
    input_view,
    managed_buffer,
    output_pointer,
    safety_margin,
)
from offload.runtime.pool import DevicePool, size_class
from tests.ptx import fakecupy

pytestmark = pytest.mark.unit
GIB = 1 << 30


def test_managed_allocation_larger_than_free_memory_is_refused_naming_sizes():
    cp, _ = fakecupy.make(free=2 * GIB, total=80 * GIB)
    with pytest.raises(MemoryError, match=r"3072\.0 MiB.*2048\.0 MiB of the device's 81920\.0 MiB"):
        ManagedPool(cp).empty((3 * GIB // 4,), np.dtype(np.float32))


def test_managed_allocation_within_the_safety_margin_is_refused():
    cp, _ = fakecupy.make(free=GIB, total=80 * GIB)
    assert safety_margin(80 * GIB) == 4 * GIB
    with pytest.raises(MemoryError, match="safety margin"):
        ManagedPool(cp).empty((1024,), np.dtype(np.float64))


def test_a_managed_allocation_that_does_not_fit_first_releases_cached_device_blocks():
    # (the device blocks of a unified call's own arrays, cached by the backend's pool)
    cp, _ = fakecupy.make(free=2 * GIB, total=80 * GIB)
    free = [2 * GIB]
    cp.cuda.runtime.memGetInfo = lambda: (free[0], 80 * GIB)
    released: list[int] = []

    def release() -> None:
        released.append(1)
        free[0] = 16 * GIB

    x = ManagedPool(cp, release=release).empty((GIB // 4,), np.dtype(np.float32))
    assert released == [1] and x.shape == (GIB // 4,)
    free[0] = 2 * GIB  # (released, still too little: refused, naming the sizes)
    with pytest.raises(MemoryError, match="does not fit"):
        ManagedPool(cp, release=released.clear).empty((GIB // 4,), np.dtype(np.float32))


def test_managed_result_is_recognised_and_passed_in_place_with_a_prefetch():
    cp, state = fakecupy.make()
    x = ManagedPool(cp).empty((4, 5), np.dtype(np.float32))
    assert managed_buffer(x[1:]) is managed_buffer(x) is not None
    view = input_view(cp, x[:, 1:], stream_ptr=0, table=FrozenTable())
    assert view.ptr == x[:, 1:].__array_interface__["data"][0]
    assert view.strides == (5, 1) and state["prefetches"] == 1
    assert output_pointer(x) == x.__array_interface__["data"][0]


def test_plain_numpy_array_is_refused_as_an_output():
    with pytest.raises(TypeError, match="unified-memory"):
        output_pointer(np.zeros(4))


def test_frozen_array_is_copied_once_and_thawing_it_drops_the_copy():
    cp, _ = fakecupy.make()
    copies = []
    cp.asarray = lambda a: copies.append(1) or np.array(a)
    table = FrozenTable()
    x = table.freeze(np.arange(6.0))
    assert not x.flags.writeable
    first = table.lookup(cp, x)
    assert table.lookup(cp, x) is first and len(copies) == 1
    x.flags.writeable = True
    assert table.lookup(cp, x) is None


def test_frozen_table_forgets_arrays_that_die():
    table = FrozenTable()
    table.freeze(np.arange(3.0))
    gc.collect()
    assert len(table) == 0


def test_pool_results_are_arrays_over_their_own_pool_blocks():
    cp, state = fakecupy.make()
    pool = DevicePool(cp)
    a = pool.empty((100,), np.dtype(np.float32))
    assert a.shape == (100,) and a.dtype == np.float32
    assert a.memptr.ptr == a.memptr.mem.ptr and pool.used_bytes == 400
    assert state["mallocs"] == 1 and state["pool_freed"] == 0  # the default pool untouched


def test_pool_out_of_memory_frees_caches_and_retries_once():
    cp, state = fakecupy.make(fail_mallocs=1)
    pool = DevicePool(cp)
    pool.empty((10,), np.dtype(np.float64))
    assert state["mallocs"] == 2 and state["pool_freed"] == 1 and state["private_freed"] == 1


def test_pool_out_of_memory_twice_is_a_memory_error():
    cp, _ = fakecupy.make(fail_mallocs=2)
    with pytest.raises(MemoryError, match="even after releasing cached blocks"):
        DevicePool(cp).empty((10,), np.dtype(np.float64))


@pytest.mark.parametrize("nbytes", [1, 511, 512, 513, 1000, 4097, 10**9])
def test_size_classes_waste_at_most_a_quarter(nbytes):
    c = size_class(nbytes)
    assert c >= nbytes and (c <= 512 or c <= nbytes * 1.25 + 1)


def test_no_cupy_is_gpu_unavailable_with_a_hint(monkeypatch):
    gpu.load_cupy.cache_clear()
    monkeypatch.setitem(sys.modules, "cupy", None)
    try:
        with pytest.raises(GPUUnavailable, match="compute_p") as info:
            gpu.load_cupy()
        assert isinstance(info.value, OffloadError)
    finally:
        gpu.load_cupy.cache_clear()


def test_no_device_is_gpu_unavailable(monkeypatch):
    cp, _ = fakecupy.make()

    def no_device():
        raise fakecupy.CUDARuntimeError("cudaErrorNoDevice")

    cp.cuda.runtime.getDeviceCount = no_device
    gpu.load_cupy.cache_clear()
    monkeypatch.setitem(sys.modules, "cupy", cp)
    try:
        with pytest.raises(GPUUnavailable, match="no usable CUDA device"):
            gpu.load_cupy()
    finally:
        gpu.load_cupy.cache_clear()


def test_backend_compile_without_a_gpu_raises_gpu_unavailable(monkeypatch):
    from offload.options import CompileOptions
    from offload.ptx.backend import GPUBackend
    from tests.ptx.irfixtures import saxpy_f32

    gpu.load_cupy.cache_clear()
    monkeypatch.setitem(sys.modules, "cupy", None)
    try:
        with pytest.raises(GPUUnavailable):
            GPUBackend().compile(saxpy_f32(), CompileOptions())
    finally:
        gpu.load_cupy.cache_clear()


def test_unknown_memory_mode_is_an_offload_error():
    from offload.ptx.backend import GPUBackend

    with pytest.raises(OffloadError, match="memory mode"):
        GPUBackend(mode="pinned")  # type: ignore[arg-type]


def test_the_device_twin_shares_the_cache_use_table_and_device_pool(monkeypatch, tmp_path):
    # a unified call's own arrays are made on the twin (device memory, no synchronise);
    # one pool of device blocks, which a managed allocation short of memory releases
    from offload.ptx import backend as B

    cp, state = fakecupy.make()
    monkeypatch.setattr(B, "load_cupy", lambda: cp)
    unified = B.GPUBackend("unified", cache_dir=tmp_path)
    twin = unified.device_twin()
    assert twin.mode == "device" and unified.device_twin() is twin
    assert twin.device_twin() is twin and B.GPUBackend("device").device_twin().mode == "device"
    assert twin.cache is unified.cache and twin._frozen is unified._frozen
    assert twin.pool() is unified.pool()
    free = [GIB]
    cp.cuda.runtime.memGetInfo = lambda: (free[0], 80 * GIB)
    before = state.get("private_freed", 0)
    with pytest.raises(MemoryError):
        unified.managed_pool().empty((1024,), np.dtype(np.float32))
    assert state.get("private_freed", 0) == before + 1
