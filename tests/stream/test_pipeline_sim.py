"""The GPU's copy/compute pipeline (``offload.stream.execute.run_gpu``) run over a stand-in
CuPy (``fake_cupy``: host memory, CUDA's stream ordering, copies and launches deferred until
an event is synchronised) with the simulator's kernels: its staging, slot reuse and copy
back give the unstreamed result bit for bit."""

from __future__ import annotations

import importlib

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


def _pipelined(shape, fn, slots, outs=None):
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
        outs=outs,
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


@pytest.fixture
def host_copies(monkeypatch):
    """The host-side copies the pipeline submits (staging in, and out to the results)."""
    execute = importlib.import_module("offload.stream.execute")  # (the module, not the function)
    calls: list[tuple[int, int]] = []
    real = execute.copy_jobs

    def spy(pool, dst, src):
        calls.append((dst.nbytes, src.nbytes))
        return real(pool, dst, src)

    monkeypatch.setattr(execute, "copy_jobs", spy)
    yield calls
    fake_cupy.unpin_all()


@pytest.mark.parametrize("slots", [1, 2])
def test_the_pipeline_writes_into_given_results(slots, host_copies):
    out = np.full(N, np.nan)
    (got,) = _pipelined((N,), stencil, slots, outs=[out])
    assert got is out and out.tobytes() == ol.compute_s(N, stencil).tobytes()
    assert host_copies  # (pageable: staged in, and copied out of the pinned buffers)


@pytest.mark.parametrize("slots", [1, 2])
def test_page_locked_inputs_and_results_are_copied_in_place(slots, host_copies):
    """No host copy at all: the DMA reads the pinned input's windows (halos included)
    and writes the pinned result's rows."""
    want = ol.compute_s(N, stencil).tobytes()
    fake_cupy.pin(X)
    out = fake_cupy.pin(np.full(N, np.nan))
    (got,) = _pipelined((N,), stencil, slots, outs=[out])
    assert got is out and out.tobytes() == want
    assert host_copies == []


def test_a_pinned_input_with_a_pageable_result(host_copies):
    fake_cupy.pin(M)
    got = _pipelined((21, 6), rows2d, 2)
    want = ol.compute_s((21, 6), rows2d)
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]
    assert host_copies and all(d == s for d, s in host_copies)  # (results only)
