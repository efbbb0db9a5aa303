"""The GPU backend's warm host path, run against a fake CuPy that records every launch.

CI has no GPU, so a stand-in CuPy (device memory = host buffers with real addresses,
``launchKernel`` decodes the packed ``kernelParams``) shows what each warm ``compute_g``
hands the driver: the right pointers, extents and strides, the *current* scalar values, and
outputs from the pools without a free-memory query per call.
"""

from __future__ import annotations

import ctypes
import gc
import types
from typing import Any

import numpy as np
import pytest

from offload import driver
from offload.diagnostics import OffloadError
from offload.ptx.args import param_ctype
from offload.ptx.backend import GPUBackend
from offload.ptx.kernel_source import ParamKind
from offload.runtime.residency import HOST_PAGES
from tests.ptx import fakecupy

pytestmark = pytest.mark.ptx


class FakeArray:
    """A C-ordered device array over a host buffer (what the runtime reads of CuPy's)."""

    def __init__(self, shape: Any, dtype: Any, memptr: Any = None, strides: Any = None):
        dtype = np.dtype(dtype)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if memptr is None:
            memptr = types.SimpleNamespace(ptr=0, mem=fakecupy.FakeMemory(0))
            memptr.mem = fakecupy.FakeMemory(int(np.prod(shape)) * dtype.itemsize)
            memptr.ptr = memptr.mem.ptr
        nbytes = max(int(np.prod(shape)) * dtype.itemsize, 1)
        raw = (ctypes.c_char * nbytes).from_address(memptr.ptr)
        base = np.frombuffer(raw, dtype=np.uint8)[: int(np.prod(shape)) * dtype.itemsize]
        self._host = np.ndarray(shape, dtype, buffer=base, strides=strides)
        self._keep = memptr
        self.data = memptr

    shape = property(lambda self: self._host.shape)
    strides = property(lambda self: self._host.strides)
    ndim = property(lambda self: self._host.ndim)
    dtype = property(lambda self: self._host.dtype)
    itemsize = property(lambda self: self._host.itemsize)
    size = property(lambda self: self._host.size)
    flags = property(lambda self: self._host.flags)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.data.ptr, False),
            "strides": self.strides,
            "version": 3,
        }

    def get(self) -> np.ndarray:
        return self._host.copy()

    def fill(self, v: Any) -> None:
        self._host.fill(v)

    def transposed(self) -> FakeArray:
        return FakeArray(self.shape[::-1], self.dtype, self.data, self._host.strides[::-1])


def make_cupy(free: int = 1 << 34, total: int = 1 << 35) -> tuple[Any, dict[str, Any]]:
    """A fake ``cupy`` with launch recording; ``state['launches']`` holds the decoded
    parameter values of every launch, ``state['meminfo']`` counts free-memory queries."""
    cp, state = fakecupy.make(free=free, total=total)
    state.update(launches=[], meminfo=0, syncs=0, managed=0, kernels={}, images=[])

    def mem_get_info() -> tuple[int, int]:
        state["meminfo"] += 1
        return free, total

    def malloc_managed(n: int) -> Any:
        state["managed"] += 1
        return fakecupy.FakeMemory(n)

    def launch(fptr, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):  # noqa: ANN001
        names, ctypes_ = state["kernels"][fptr]
        ptrs = (ctypes.c_void_p * max(1, len(ctypes_))).from_address(params)
        values = [ct.from_address(ptrs[k]).value for k, ct in enumerate(ctypes_)]
        state["launches"].append({**dict(zip(names, values, strict=True)), "_fn": fptr})

    class Stream:
        ptr = 0

        def synchronize(self) -> None:
            state["syncs"] += 1

    stream = Stream()

    class Function:
        num_regs = 32
        max_threads_per_block = 1024
        local_size_bytes = 0
        shared_size_bytes = 0

        def __init__(self) -> None:
            self.buf = fakecupy.FakeMemory(8)
            self.ptr = self.buf.ptr

    class Module:
        def load(self, image: bytes) -> None:
            """A cubin (an ELF image) or NUL-terminated PTX, as cuModuleLoadData takes."""
            cubin = image.startswith(b"\x7fELF")
            assert cubin or image.endswith(b"\0")
            state["images"].append("cubin" if cubin else "ptx")

        def get_function(self, name: str) -> Function:
            return Function()

    def zeros(n: int, dtype: Any) -> FakeArray:
        a = FakeArray((n,), dtype)
        a.fill(0)
        return a

    def asarray(x: Any) -> FakeArray:
        x = np.ascontiguousarray(x)
        a = FakeArray(x.shape, x.dtype)
        a._host[...] = x
        return a

    cp.ndarray = FakeArray
    cp.zeros = zeros
    cp.asarray = asarray
    cp.cuda.runtime.memGetInfo = mem_get_info
    cp.cuda.runtime.getDeviceProperties = lambda i: {
        "name": b"Fake GPU",
        "major": 9,
        "minor": 0,
        "multiProcessorCount": 132,
        "maxThreadsPerMultiProcessor": 2048,
        "regsPerMultiprocessor": 65536,
        "totalGlobalMem": total,
    }
    cp.cuda.malloc_managed = malloc_managed
    cp.cuda.driver = types.SimpleNamespace(launchKernel=launch)
    cp.cuda.function = types.SimpleNamespace(Module=Module)
    cp.cuda.get_current_stream = lambda: stream
    return cp, state


def _param_name(p: Any, caps: list[str]) -> str:
    """``extent0``, ``out0``, ``xs``, ``xs.shape0``, ``xs.stride0``, ``alpha``, ``err``."""
    if p.kind == ParamKind.EXTENT:
        return f"extent{p.index}"
    if p.kind == ParamKind.OUT:
        return f"out{p.index}"
    if p.kind == ParamKind.CAP_EXTENT:
        return f"{caps[p.index]}.shape{p.axis}"
    if p.kind == ParamKind.CAP_STRIDE:
        return f"{caps[p.index]}.stride{p.axis}"
    if p.kind in (ParamKind.PTR, ParamKind.SCALAR):
        return caps[p.index]
    return "err"


def _backend(mode: str, state: dict[str, Any], tmp_path: Any) -> GPUBackend:
    be = GPUBackend(mode=mode, cache_dir=tmp_path)
    real_kernel = be._kernel

    def register(fn: Any, options: Any, index: Any) -> Any:
        """Load a variant's kernel and record its parameters by its function pointer (each
        variant as a launch first makes it)."""
        k = real_kernel(fn, options, index)
        caps = k.capture_names
        names = [_param_name(p, caps) for p in k.source.params]
        state["kernels"][k.fn_ptr] = (
            names,
            [param_ctype(p.kind, p.dtype, k.source.index_dtype) for p in k.source.params],
        )
        return k

    be._kernel = register  # type: ignore[method-assign]
    return be


xs = np.zeros(1)
alpha = 2.0


def axpy(i):
    return alpha * xs[i] + 1.0


def _last(state: dict[str, Any]) -> list[Any]:
    return state["launches"][-1]


@pytest.mark.parametrize("mode", ["device", "unified"])
def test_warm_launch_packs_current_pointers_extents_and_scalars(fake_cupy, tmp_path, mode):
    cp, state = fake_cupy
    be = _backend(mode, state, tmp_path)
    global xs, alpha
    saved = xs, alpha
    try:
        xs = cp.asarray(np.arange(6.0))
        alpha = 2.0
        out = driver.run(be, axpy, (6,))
        first = _last(state)
        assert first["extent0"] == 6 and first["xs"] == xs.data.ptr
        assert first["xs.shape0"] == 6 and first["xs.stride0"] == 1 and first["alpha"] == 2.0
        assert first["out0"] == (out.data.ptr if mode == "device" else out.ctypes.data)
        alpha = 3.5
        driver.run(be, axpy, (6,))
        assert _last(state)["alpha"] == 3.5  # a changed scalar is never stale
        xs = cp.asarray(np.arange(9.0))
        driver.run(be, axpy, (6,))
        assert _last(state)["xs"] == xs.data.ptr and _last(state)["xs.shape0"] == 9
    finally:
        xs, alpha = saved
    assert len(state["launches"]) == 3


def test_unified_results_are_numpy_and_their_blocks_are_reused_without_a_query(fake_cupy, tmp_path):
    cp, state = fake_cupy
    be = _backend("unified", state, tmp_path)
    global xs
    saved = xs
    try:
        xs = cp.asarray(np.arange(1000.0))
        out = driver.run(be, axpy, (1000,))
        assert type(out) is np.ndarray and out.shape == (1000,)
        queries, mallocs = state["meminfo"], state["managed"]
        assert queries >= 1 and mallocs == 1
        ptr = out.ctypes.data
        del out
        gc.collect()
        again = driver.run(be, axpy, (1000,))
        assert again.ctypes.data == ptr  # the freed block came back from the pool
        assert state["managed"] == mallocs and state["meminfo"] == queries
        other = driver.run(be, axpy, (1000,))  # `again` is alive: a fresh block
        assert other.ctypes.data != ptr and state["managed"] == mallocs + 1
    finally:
        xs = saved


def test_managed_result_fed_back_is_passed_in_place(fake_cupy, tmp_path):
    cp, state = fake_cupy
    be = _backend("unified", state, tmp_path)
    global xs
    saved = xs
    try:
        xs = cp.asarray(np.arange(8.0))
        first = driver.run(be, axpy, (8,))
        xs = first[::2]  # a strided view of a managed result
        driver.run(be, axpy, (4,))
        last = _last(state)
        assert last["xs"] == first.ctypes.data and last["xs.shape0"] == 4
        assert last["xs.stride0"] == 2
    finally:
        xs = saved


def test_in_place_reshape_of_a_captured_device_array_recompiles(fake_cupy, tmp_path):
    cp, state = fake_cupy
    be = _backend("device", state, tmp_path)
    global xs
    saved = xs
    try:
        xs = cp.asarray(np.arange(6.0))
        driver.run(be, axpy, (6,))
        assert "xs.shape0" in _last(state)
        xs._host.shape = (2, 3)  # same object, now rank 2: the rank-1 kernel cannot run
        # (recompiled, xs[i] is a row view now, which an element function cannot return)
        with pytest.raises(OffloadError, match="cannot return an elementwise array"):
            driver.run(be, axpy, (6,))
    finally:
        xs = saved


@pytest.mark.parametrize("touched", [True, False])
def test_unified_out_array_is_prefetched_only_when_the_host_touched_it(
    fake_cupy, tmp_path, monkeypatch, touched
):
    cp, state = fake_cupy
    be = _backend("unified", state, tmp_path)
    global xs
    saved = xs
    try:
        xs = cp.asarray(np.arange(8.0))
        result = driver.run(be, axpy, (8,))
        monkeypatch.setattr(HOST_PAGES, "touched", lambda ptr, nbytes: touched)
        before = state["prefetches"]
        assert driver.run(be, axpy, (8,), out=result) is result
        assert state["prefetches"] - before == (1 if touched else 0)
        assert _last(state)["out0"] == result.ctypes.data
    finally:
        xs = saved


def _view(base: FakeArray, host: np.ndarray) -> FakeArray:
    """A device array over ``base``'s memory with ``host``'s shape and strides."""
    view = FakeArray((1,), base.dtype, base.data)
    view._host = host
    return view


def _counting_prepare(be: GPUBackend) -> list[int]:
    """Count ``prepare_captures`` calls (the general path's; the fused launch makes none)."""
    calls = [0]
    real = be.prepare_captures

    def prepare(captures: Any) -> Any:
        calls[0] += 1
        return real(captures)

    be.prepare_captures = prepare  # type: ignore[method-assign]
    return calls


def test_warm_call_is_one_fused_launch_with_the_general_paths_parameters(fake_cupy, tmp_path):
    cp, state = fake_cupy
    be = _backend("device", state, tmp_path)
    calls = _counting_prepare(be)
    global xs, alpha
    saved = xs, alpha
    try:
        xs = cp.asarray(np.arange(6.0))
        alpha = 2.0
        driver.run(be, axpy, (6,))  # the full path: general launch, memo made
        general = {k: v for k, v in _last(state).items() if k != "out0"}
        assert calls[0] == 1
        driver.run(be, axpy, (6,))  # warm: fused
        fused = {k: v for k, v in _last(state).items() if k != "out0"}
        assert calls[0] == 1, "the warm call prepared captures: not the fused launch"
        assert fused == general
        alpha = 5.0
        driver.run(be, axpy, (6,))
        assert _last(state)["alpha"] == 5.0 and calls[0] == 1
    finally:
        xs, alpha = saved


def test_fused_launch_hands_a_strided_view_to_the_general_kernel(fake_cupy, tmp_path):
    cp, state = fake_cupy
    be = _backend("device", state, tmp_path)
    calls = _counting_prepare(be)
    global xs
    saved = xs
    try:
        base = cp.asarray(np.arange(12.0))
        xs = base
        driver.run(be, axpy, (6,))
        driver.run(be, axpy, (6,))
        unit_fn = _last(state)["_fn"]
        xs = _view(base, base._host[::2])  # every other element
        driver.run(be, axpy, (6,))  # the same types: the warm lane, guard fails -> general
        last = _last(state)
        assert calls[0] == 2 and last["_fn"] != unit_fn
        assert last["xs.stride0"] == 2 and last["xs.shape0"] == 6
    finally:
        xs = saved


def test_fused_launch_leaves_a_misaligned_stride_to_the_general_paths_error(fake_cupy, tmp_path):
    cp, state = fake_cupy
    be = _backend("device", state, tmp_path)
    global xs
    saved = xs
    try:
        base = cp.asarray(np.arange(12.0))
        xs = base
        driver.run(be, axpy, (4,))
        driver.run(be, axpy, (4,))
        xs = _view(base, np.lib.stride_tricks.as_strided(base._host, (4,), (12,)))
        with pytest.raises(OffloadError, match="not a multiple of the item size"):
            driver.run(be, axpy, (4,))
    finally:
        xs = saved


def pair(i):
    return xs[i] + 1.0, xs[i] * alpha


def test_tuple_out_warm_call_packs_both_results_in_one_fused_launch(fake_cupy, tmp_path):
    cp, state = fake_cupy
    be = _backend("device", state, tmp_path)
    calls = _counting_prepare(be)
    global xs
    saved = xs
    try:
        xs = cp.asarray(np.arange(6.0))
        outs = [(cp.zeros(6, np.float64), cp.zeros(6, np.float64)) for _ in range(2)]
        for k in range(4):
            out = outs[k % 2]
            assert driver.run(be, pair, (6,), out=out) is out
            last = _last(state)
            assert (last["out0"], last["out1"]) == (out[0].data.ptr, out[1].data.ptr)
        assert calls[0] == 1  # the first call only: the others are the fused warm launch
    finally:
        xs = saved


def test_unified_warm_call_with_a_managed_capture_is_one_fused_launch(
    fake_cupy, tmp_path, monkeypatch
):
    # Run 12: unified mode waits for each kernel, so the host path of a ping-pong's
    # managed capture is on the critical path; it is fused like a device array's.
    cp, state = fake_cupy
    be = _backend("unified", state, tmp_path)
    calls = _counting_prepare(be)
    global xs
    saved = xs
    try:
        xs = cp.asarray(np.arange(8.0))
        src = driver.run(be, axpy, (8,))  # a managed result
        xs = src
        driver.run(be, axpy, (8,))  # full path: a memo for a NumPy capture
        general = {k: v for k, v in _last(state).items() if k != "out0"}
        before = calls[0]
        monkeypatch.setattr(HOST_PAGES, "touched", lambda ptr, nbytes: True)
        prefetches = state["prefetches"]
        got = driver.run(be, axpy, (8,))  # warm: fused, the capture prefetched first
        assert calls[0] == before, "the warm unified call prepared captures"
        assert {k: v for k, v in _last(state).items() if k != "out0"} == general
        assert _last(state)["xs"] == src.ctypes.data
        assert state["prefetches"] > prefetches
        np.testing.assert_array_equal(got.shape, (8,))
        xs = src[::2]  # a view: not the whole block, the general path
        driver.run(be, axpy, (4,))
        assert calls[0] == before + 1
        assert _last(state)["xs"] == src.ctypes.data and _last(state)["xs.stride0"] == 2
    finally:
        xs = saved


def test_unified_warm_call_with_a_frozen_host_capture_uses_its_device_copy(fake_cupy, tmp_path):
    cp, state = fake_cupy
    be = _backend("unified", state, tmp_path)
    calls = _counting_prepare(be)
    global xs
    saved = xs
    try:
        host = np.arange(6.0)
        be._frozen.freeze(host)
        xs = host
        driver.run(be, axpy, (6,))
        copy_ptr = _last(state)["xs"]
        assert copy_ptr != host.ctypes.data  # the cached device copy, not the host array
        before = calls[0]
        driver.run(be, axpy, (6,))
        assert calls[0] == before and _last(state)["xs"] == copy_ptr  # fused, same copy
        host.flags.writeable = True  # thawed: the copy may be stale, the general path copies
        driver.run(be, axpy, (6,))
        assert calls[0] == before + 1  # (its fresh copy may reuse the old copy's address)
        assert be._frozen.lookup(cp, host) is None  # the stale copy is forgotten
    finally:
        xs = saved
