"""The GPU's copy/compute pipeline (``offload.stream.execute.run_gpu``) run over a stand-in
CuPy (``fake_cupy``: host memory, CUDA's stream ordering, copies and launches deferred until
an event is synchronised) with the simulator's kernels: its staging, slot reuse and copy
back give the unstreamed result bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
import offload.stream as stream
from offload.stream.execute import run_gpu
from offload.stream.progress import Progress
from tests.stream import fake_cupy

pytestmark = pytest.mark.sim

RNG = np.random.default_rng(9)
N = 50
X = RNG.random(N)
M = RNG.random((21, 6)).astype(np.float32)
P = RNG.integers(0, N, N)


@pytest.fixture(autouse=True)
def _simulator_with_small_budget():
    saved = (ol.config.gpu_simulator, ol.config.device_memory_limit)
    ol.config.gpu_simulator = True
    ol.config.device_memory_limit = 400
    yield
    ol.config.gpu_simulator, ol.config.device_memory_limit = saved
    stream.release()  # (the fake's "pinned" block is host memory: not for a real run)


def _pipelined(shape, fn, slots):
    p = stream.prepare(fn, shape)
    kernel = fake_cupy.Deferred(p.kernel)
    outs = run_gpu(
        fake_cupy.cp,
        kernel,
        p.backend,
        p.wf,
        p.plan,
        p.values,
        p.extents,
        shape,
        p.dtypes,
        slots,
        Progress(len(p.plan.chunks), False),
    )
    assert kernel.launches == len(p.plan.chunks) > slots
    return outs


def stencil(i):
    if 0 < i < N - 1:
        return X[i - 1] + 2.0 * X[i] + X[i + 1]
    return X[i]


def gathered(i):
    return X[P[i]] - X[i]


def rows2d(i, j):
    up = M[i - 1, j] if i > 0 else np.float32(0.0)
    return up + M[i, (j + 1) % 6], i * 6 + j


@pytest.mark.parametrize("slots", [1, 2, 3])
def test_the_pipeline_gives_the_unstreamed_bits(slots):
    (got,) = _pipelined((N,), stencil, slots)
    assert got.tobytes() == ol.compute_s(N, stencil).tobytes()


def test_the_pipeline_with_a_resident_array():
    ol.config.device_memory_limit = 600
    assert stream.plan(N, gathered).resident
    (got,) = _pipelined((N,), gathered, 3)
    assert got.tobytes() == ol.compute_s(N, gathered).tobytes()


def test_the_pipeline_with_two_results_in_2d():
    got = _pipelined((21, 6), rows2d, 3)
    want = ol.compute_s((21, 6), rows2d)
    for g, w in zip(got, want, strict=True):
        assert g.tobytes() == w.tobytes()


F = np.asfortranarray(RNG.random((21, 6)))
S = RNG.random(2 * N)[::2]


def strided(i, j):
    return F[i, j] * S[i] + (F[i + 1, j] if i + 1 < 21 else 0.0)


def test_the_pipeline_stages_strided_and_fortran_order_inputs():
    (got,) = _pipelined((21, 6), strided, 3)
    assert got.tobytes() == ol.compute_s((21, 6), strided).tobytes()
