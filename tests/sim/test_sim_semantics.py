"""compute_g's kernels under numba's CUDA simulator agree with the IR interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from offload.ir.core import Function
from offload.options import CompileOptions
from offload.ptx.sim import SimBackend
from tests.corpus.valid import PROGRAMS, assert_results_match
from tests.ptx.irfixtures import ALL, loop_sum_row
from tests.ptx.semantic import (
    assert_matches_interpreter,
    fixture_case,
    lowered_corpus_program,
    run_backend,
)

pytestmark = pytest.mark.sim


@pytest.fixture(scope="module")
def backend() -> SimBackend:
    return SimBackend()


def test_backend_is_the_simulator(backend):
    assert backend.name == "gpu-sim"


@pytest.mark.parametrize("name", sorted(ALL))
def test_hand_built_ir_matches_the_interpreter(backend, name):
    fn: Function = ALL[name]()
    shape, caps = fixture_case(name, np.random.default_rng(0))
    assert_matches_interpreter(run_backend(backend, fn, shape, caps), fn, shape, caps)


def test_transposed_capture_is_read_through_its_strides(backend):
    fn = ALL["square_or_negate"]()
    a = np.random.default_rng(1).random((37, 5), dtype=np.float32).T
    got = run_backend(backend, fn, (5, 37), [a])
    assert_matches_interpreter(got, fn, (5, 37), [a])


def test_grid_smaller_than_the_index_space_covers_every_element(backend):
    fn = ALL["index_arith"]()
    shape = (2, 3, 300)  # 1800 elements, the simulator's grid is at most 4 blocks of 64
    got = run_backend(backend, fn, shape, [])
    assert_matches_interpreter(got, fn, shape, [])


def test_empty_shape_launches_nothing(backend):
    fn = ALL["saxpy"]()
    x = np.zeros(0, np.float32)
    (got,) = run_backend(backend, fn, (0,), [x, x, np.float32(1)])
    assert got.shape == (0,)


def test_changed_captured_scalar_is_not_stale(backend):
    fn = ALL["saxpy"]()
    kernel = backend.compile(fn, CompileOptions())
    x = np.arange(4, dtype=np.float32)
    for alpha in (1.0, 3.0):
        (out,) = backend.allocate((4,), [np.dtype(np.float32)])
        kernel.launch((4,), [out], backend.prepare_captures([x, x, np.float32(alpha)]))
        np.testing.assert_array_equal(out, np.float32(alpha) * x + x)


def test_bounds_check_reports_element_and_source_line(backend):
    fn = loop_sum_row()
    fn.captures[0].name = "weights"
    a = np.ones((3, 4))
    kernel = backend.compile(fn, CompileOptions(bounds_check=True))
    (out,) = backend.allocate((5,), [np.dtype(np.float64)])  # rows 3 and 4 read past `a`
    with pytest.raises(IndexError, match=r"'weights' at element \((3|4),\)"):
        kernel.launch((5,), [out], backend.prepare_captures([a]))


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_corpus_program_matches_cpython(backend, program):
    options = CompileOptions(verify=True)
    fn, caps = lowered_corpus_program(program, options)
    got = run_backend(backend, fn, program.shape, caps, options)
    assert_results_match(program, got)
