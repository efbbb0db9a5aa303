"""The GPU backend on a real GPU: the semantic suite, memory modes, cache, faults."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from offload.diagnostics import KernelFault
from offload.options import CompileOptions
from offload.ptx.backend import GPUBackend
from offload.runtime.memory import managed_buffer, use
from tests.corpus.valid import PROGRAMS, assert_results_match
from tests.ptx.irfixtures import ALL, loop_sum_row, saxpy_f32, square_or_negate_f32
from tests.ptx.semantic import (
    assert_matches_interpreter,
    fixture_case,
    lowered_corpus_program,
    run_backend,
)

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", params=["unified", "device"])
def backend(request, tmp_path_factory):
    return GPUBackend(mode=request.param, cache_dir=tmp_path_factory.mktemp("cache"))


@pytest.mark.parametrize("name", sorted(ALL))
def test_hand_built_ir_matches_the_interpreter(backend, name):
    fn = ALL[name]()
    shape, caps = fixture_case(name, np.random.default_rng(0))
    assert_matches_interpreter(run_backend(backend, fn, shape, caps), fn, shape, caps)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_corpus_program_matches_cpython(backend, program):
    options = CompileOptions(verify=True)
    fn, caps = lowered_corpus_program(program, options)
    assert_results_match(program, run_backend(backend, fn, program.shape, caps, options))


def test_transposed_and_device_inputs_are_read_through_strides(backend):
    import cupy

    fn = square_or_negate_f32()
    host = np.random.default_rng(1).random((300, 70), dtype=np.float32).T
    for a in (host, cupy.asarray(host), cupy.asarray(host.copy())):
        got = run_backend(backend, fn, (70, 300), [a])
        assert_matches_interpreter(got, fn, (70, 300), [host])


def test_large_shape_with_many_rows_is_covered(backend):
    fn = ALL["index_arith"]()
    shape = (3, 70_000, 5)  # rows beyond one wave of blocks: the grid-stride loop runs
    got = run_backend(backend, fn, shape, [])
    want = np.arange(3)[:, None, None] * 100 + np.arange(70_000)[None, :, None] * 10 + np.arange(5)
    np.testing.assert_array_equal(got[0], want)


def test_unified_result_feeds_the_next_call_without_a_copy():
    be = GPUBackend(mode="unified")
    fn = saxpy_f32()
    kernel = be.compile(fn, CompileOptions())
    x = np.arange(1000, dtype=np.float32)
    (y,) = be.allocate((1000,), [np.dtype(np.float32)])
    kernel.launch((1000,), [y], be.prepare_captures([x, x, np.float32(1)]))
    assert managed_buffer(y) is not None
    view = be.prepare_captures([y])[0]
    assert view[0] == y.__array_interface__["data"][0]  # (ptr, shape, strides, owner): in place
    (z,) = be.allocate((1000,), [np.dtype(np.float32)])
    kernel.launch((1000,), [z], be.prepare_captures([y, x, np.float32(2)]))
    np.testing.assert_array_equal(z, 2 * (2 * x) + x)


def test_frozen_input_is_copied_once():
    be = GPUBackend(mode="device")
    x = use(np.arange(64, dtype=np.float32))
    first = be.prepare_captures([x])[0]
    second = be.prepare_captures([x])[0]
    assert first[0] == second[0]  # (ptr, shape, strides, owner): the same device copy


def test_device_mode_results_are_cupy_arrays_with_dlpack():
    import cupy

    be = GPUBackend(mode="device")
    (out,) = run_backend(be, saxpy_f32(), (8,), [np.ones(8, np.float32)] * 2 + [np.float32(1)])
    (raw,) = be.allocate((8,), [np.dtype(np.float32)])
    assert isinstance(raw, cupy.ndarray) and hasattr(raw, "__dlpack__")
    np.testing.assert_array_equal(out, 2)


def test_device_mode_reuses_the_block_of_a_dead_result_and_keeps_live_ones():
    be = GPUBackend(mode="device")
    f32 = [np.dtype(np.float32)]
    (a,) = be.allocate((1000,), f32)
    ptr = a.data.ptr
    (b,) = be.allocate((1000,), f32)
    assert b.data.ptr != ptr  # a is alive: its block is not handed out again
    del a
    (c,) = be.allocate((990,), f32)  # the same 512-byte bin
    assert c.data.ptr == ptr and be.pool().cached_bytes == 0
    del b, c
    assert be.pool().cached_bytes > 0 and be.pool().used_bytes == 0


def test_bounds_check_raises_index_error_naming_the_element():
    be = GPUBackend(mode="device")
    fn = loop_sum_row()
    kernel = be.compile(fn, CompileOptions(bounds_check=True))
    (out,) = be.allocate((5,), [np.dtype(np.float64)])
    with pytest.raises(IndexError, match=r"at element \((3|4),\)"):
        kernel.launch((5,), [out], be.prepare_captures([np.ones((3, 4))]))


def test_driver_error_is_a_kernel_fault_naming_the_function():
    be = GPUBackend(mode="device")
    kernel = be.compile(saxpy_f32(), CompileOptions())
    (out,) = be.allocate((4,), [np.dtype(np.float32)])
    caps = be.prepare_captures([np.ones(4, np.float32)] * 2 + [np.float32(1)])
    # Fault injection: a block larger than the device allows makes the launch fail.
    lead = kernel.pick((4,), caps)
    lead._configs[(4,)] = type(lead.config((4,)))((1, 1, 1), (4096, 1, 1), 1, 1.0)
    with pytest.raises(KernelFault, match="saxpy"):
        kernel.launch((4,), [out], caps)


def test_fresh_process_hits_the_disk_cache(tmp_path):
    code = (
        "import sys, time; from offload.ptx.backend import GPUBackend;"
        "from offload.options import CompileOptions; from tests.ptx.irfixtures import saxpy_f32;"
        "be = GPUBackend(cache_dir=sys.argv[1]);"
        "be.compile(saxpy_f32(), CompileOptions()); print(be.cache.stats.disk_hits)"
    )
    env = dict(os.environ)
    runs = [
        subprocess.run(
            [sys.executable, "-c", code, str(tmp_path)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        for _ in range(2)
    ]
    assert [r.stdout.strip() for r in runs] == ["0", "1"]
