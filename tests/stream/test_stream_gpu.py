"""compute_g streamed on a real GPU (the copy/compute pipeline of offload.stream.execute:
pinned staging, three CUDA streams): equal bit for bit to the unstreamed result."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
import offload.stream as stream

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(5)
N = 1 << 20
X = RNG.random(N, dtype=np.float32)
M = RNG.random((512, 384))
P = RNG.integers(0, N, N)


@pytest.fixture(autouse=True)
def _budget():
    saved = ol.config.device_memory_limit
    ol.config.device_memory_limit = None
    yield
    ol.config.device_memory_limit = saved


def _both(shape, fn, limit):
    want = ol.compute_g(shape, fn)
    ol.config.device_memory_limit = limit
    plan = stream.plan(shape, fn)
    got = ol.compute_g(shape, fn)
    ol.config.device_memory_limit = None
    return plan, got, want


def stencil(i):
    if 0 < i < N - 1:
        return X[i - 1] + X[i] * np.float32(2.0) + X[i + 1]
    return X[i]


def test_a_streamed_stencil_on_the_gpu_equals_the_unstreamed_one():
    plan, got, want = _both(N, stencil, 1 << 20)
    assert len(plan.chunks) > 4
    assert type(got) is np.ndarray and got.tobytes() == np.asarray(want).tobytes()


def rows2d(i, j):
    up = M[i - 1, j] if i > 0 else 0.0
    return up + M[i, j] * M[i, (j + 1) % 384], i * 384 + j


def test_a_streamed_2d_function_with_two_results_on_the_gpu():
    plan, got, want = _both((512, 384), rows2d, 1 << 20)
    assert len(plan.chunks) > 2
    for g, w in zip(got, want, strict=True):
        assert g.tobytes() == np.asarray(w).tobytes()


def test_a_resident_gather_and_a_strided_input_on_the_gpu():
    xs = X[::2]

    def gathered(i):
        return X[P[i] // 2] + xs[i]

    plan, got, want = _both(N // 2, gathered, 8 << 20)
    assert plan.resident and len(plan.chunks) > 1
    assert got.tobytes() == np.asarray(want).tobytes()


def test_forced_streaming_of_data_that_fits_on_the_gpu():
    want = np.asarray(ol.compute_g(N, stencil))
    for rows in (1000, 65536, N):
        assert stream.compute_g(N, stencil, rows=rows).tobytes() == want.tobytes()


def test_dask_blocks_on_the_gpu_are_cupy_and_equal_compute_s():
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    old = pytest.importorskip("offload.dask")
    import cupy

    x = da.from_array(M, chunks=((100, 312, 100), (200, 184)))

    def grad(i, j):
        g = x[i, j] * 2.0
        if i > 0:
            g -= x[i - 1, j]
        if j + 1 < x.shape[1]:
            g -= x[i, j + 1]
        return g

    def grad_np(i, j):
        g = M[i, j] * 2.0
        if i > 0:
            g -= M[i - 1, j]
        if j + 1 < M.shape[1]:
            g -= M[i, j + 1]
        return g

    y = old.compute(M.shape, grad, target="g")
    assert isinstance(y._meta, cupy.ndarray)
    with dask.config.set(scheduler="threads"):
        got = y.compute()
    assert cupy.asnumpy(got).tobytes() == ol.compute_s(M.shape, grad_np).tobytes()


class _CupySum:
    """A BlockFold whose partial is CuPy's sum of the chunk, on the device."""

    neutral = 0.0

    def partial(self, block):
        return float(block.sum())

    def combine(self, a, b):
        return a + b


def test_a_streamed_fold_on_the_gpu_combines_device_partials_in_the_fixed_tree():
    import cupy

    fold = _CupySum()
    ol.config.device_memory_limit = 1 << 20
    plan = stream.plan(N, stencil)
    got = stream.fold_all(N, stencil, fold=fold)
    ol.config.device_memory_limit = None
    values = cupy.asarray(np.asarray(ol.compute_g(N, stencil)))
    partials = [fold.partial(values[c.block[0][0] : c.block[0][1]]) for c in plan.chunks]
    assert len(partials) > 4
    assert got == stream.combine_tree(fold, partials)


def test_fold_seq_on_the_gpu_equals_compute_s_for_integers_and_keeps_its_bits():
    def add(a, b):
        return a + b

    rng = np.random.default_rng(4)
    items = [rng.integers(-1000, 1000, n) for n in (3, 1 << 20, 5000)]
    whole = np.concatenate(items)
    got = stream.fold_seq(add, 0, items, each=lambda a: ol.map(lambda v: v * 3, a))
    want = ol.compute_s(ol.fold_all(add, 0, ol.map(lambda v: v * 3, whole)))
    assert isinstance(got, np.ndarray) and got.tobytes() == want.tobytes()
    floats = [rng.random(n) for n in (1 << 22, 17)]  # the first is staged (32 MiB)
    first = stream.fold_seq(add, 0.0, floats)
    assert stream.fold_seq(add, 0.0, floats).tobytes() == first.tobytes()
    assert abs(float(first) - sum(float(f.sum()) for f in floats)) < 1e-6 * float(first)
