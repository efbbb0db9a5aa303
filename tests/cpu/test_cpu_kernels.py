"""Kernel layout through both CPU backends: ranks 0-4, empty shapes, tiling, strided and
reversed captures, captured scalars as parameters, bounds checking, the kernel cache."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload.cpu import CPU_PAR, CPU_SEQ, CpuBackend, OutOfBoundsRead
from offload.diagnostics import OffloadError, Span
from offload.ir import Builder, Capture, Opcode
from offload.ir.core import Function
from offload.ir.interp import compute
from offload.ir.types import F64, I64, ArrayType
from offload.options import CompileOptions

pytestmark = pytest.mark.cpu

BACKENDS = [CPU_SEQ, CPU_PAR]
OPTS = CompileOptions()


def _affine(rank: int) -> Function:
    """f(i..) = a[i..] * 2 + sum_k (k+1) * i_k + s   (a: f64 array of rank ``rank``, s: i64)."""
    b = Builder(f"affine{rank}", rank, [Capture("a", ArrayType(F64, rank)), Capture("s", I64)])
    *idx, a, s = b.function.params
    acc = b.const(0, I64)
    for k, i in enumerate(idx):
        acc = b.binary(Opcode.ADD, acc, b.binary(Opcode.MUL, i, b.const(k + 1, I64)))
    acc = b.binary(Opcode.ADD, acc, s)
    x = b.binary(Opcode.MUL, b.load(a, list(idx)), b.const(2.0, F64))
    b.ret([b.binary(Opcode.ADD, x, b.cast(acc, F64)), acc])
    b.function.result_types = [F64, I64]
    return b.function


_AFFINE = {r: _affine(r) for r in range(5)}


def _run(backend: CpuBackend, fn: Function, shape: tuple[int, ...], caps: list[Any]) -> list[Any]:
    kernel = backend.compile(fn, OPTS)
    outs = backend.allocate(shape, [t.dtype for t in fn.result_types])
    kernel.launch(shape, outs, caps)
    return outs


SHAPES = [(), (0,), (7,), (3, 0), (2, 3), (3, 2500), (2, 3, 4), (0, 2, 2), (2, 1, 3, 2)]


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_rank_and_empty_shape_matches_interpreter(
    shape: tuple[int, ...], backend: CpuBackend
) -> None:
    fn = _AFFINE[len(shape)]
    a = np.asarray(np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) - 3.5)
    s = np.int64(11)
    got = _run(backend, fn, shape, [a, s])
    want = compute(fn, shape, [a, s])
    for g, w in zip(got, want, strict=True):
        assert g.shape == shape
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
def test_reversed_and_strided_captures_read_the_right_elements(backend: CpuBackend) -> None:
    base = np.arange(6 * 10, dtype=np.float64).reshape(6, 10)
    for a in (base[::-1, ::3], base[1::2, ::-2], base.T[:4, :3], np.asfortranarray(base)):
        shape = a.shape
        got = _run(backend, _AFFINE[2], shape, [a, np.int64(0)])
        want = compute(_AFFINE[2], shape, [np.ascontiguousarray(a), np.int64(0)])
        np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
def test_changed_captured_scalar_is_never_stale(backend: CpuBackend) -> None:
    a = np.zeros(4)
    first = _run(backend, _AFFINE[1], (4,), [a, np.int64(1)])[1]
    second = _run(backend, _AFFINE[1], (4,), [a, np.int64(100)])[1]
    np.testing.assert_array_equal(second - first, np.full(4, 99))


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
def test_compile_reuses_the_cached_kernel_for_equal_ir(backend: CpuBackend) -> None:
    assert backend.compile(_affine(2), OPTS) is backend.compile(_affine(2), OPTS)
    assert backend.compile(_affine(2), OPTS) is not backend.compile(
        _affine(2), CompileOptions(fastmath=True)
    )


def _shifted_read() -> Function:
    """f(i) = a[i + 1]: the last element reads one past the end."""
    b = Builder("shifted", 1, [Capture("a", ArrayType(F64, 1))], span=Span("k.py", 1, 0, 1, 5))
    i, a = b.function.params
    b.span = Span("k.py", 2, 11, 2, 19, "    return a[i + 1]")
    j = b.binary(Opcode.ADD, i, b.const(1, I64))
    b.ret([b.load(a, [j])])
    b.function.result_types = [F64]
    return b.function


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
def test_bounds_check_turns_out_of_bounds_read_into_index_error(backend: CpuBackend) -> None:
    fn = _shifted_read()
    kernel = backend.compile(fn, CompileOptions(bounds_check=True))
    outs = backend.allocate((5,), [np.dtype(np.float64)])
    with pytest.raises(OutOfBoundsRead) as info:
        kernel.launch((5,), outs, [np.arange(5.0)])
    err = info.value
    assert isinstance(err, IndexError) and isinstance(err, OffloadError)
    text = str(err)
    assert "'shifted'" in text and "a[5]" in text and "(4,)" in text
    assert "k.py:2:12" in text and "return a[i + 1]" in text


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
def test_bounds_checked_kernel_computes_in_bounds_reads(backend: CpuBackend) -> None:
    fn = _shifted_read()
    kernel = backend.compile(fn, CompileOptions(bounds_check=True))
    outs = backend.allocate((4,), [np.dtype(np.float64)])
    kernel.launch((4,), outs, [np.arange(5.0)])
    np.testing.assert_array_equal(outs[0], [1.0, 2.0, 3.0, 4.0])


def test_source_shows_parallel_tiles_and_line_comments() -> None:
    # cpu-par: a range of tasks (elements for rank 1, row tiles above) that the shared
    # driver runs on numba's threads (offload.cpu.parallel; tests/cpu/test_compile_time_rules.py)
    text = CPU_PAR.source(_shifted_read(), OPTS)
    assert "for _r0 in range(t0, t1):" in text and "# offload: k.py:2" in text
    tiled = CPU_PAR.source(_AFFINE[3], OPTS)
    assert "for task in range(t0, t1):" in tiled and "tiles = (n2 + 2047) // 2048" in tiled
    assert "prange(" not in CPU_SEQ.source(_AFFINE[3], OPTS)
