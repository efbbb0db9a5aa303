"""Folds on a real GPU (the gpu lane; skipped without one): every launch shape of the
fold's tree -- the tail over the array itself, the tail reading a first stage from global
memory, element stages before the tail -- gives compute_s's bits in cross_target mode,
and a kept node's warm calls (frozen launches, ``replay.rerun``) read their inputs anew.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import offload as ol
from offload.config import config
from tests.acc.sim_lane import needs_gpu
from tests.acc.skeleton_refs import add, matmul2

pytestmark = [pytest.mark.gpu, needs_gpu]


def keep_first(a, b):
    return a


def square(v):
    return v * v


def _host(x: Any) -> np.ndarray[Any, Any]:
    if isinstance(x, tuple):
        return np.stack([_host(c) for c in x])
    return np.asarray(x.get()) if hasattr(x, "get") else np.asarray(x)


@pytest.fixture(params=["device", "unified"])
def memory(request, monkeypatch):
    monkeypatch.setattr(config, "memory", request.param)
    return request.param


def _same_as_s(make, xs) -> None:
    """``make(*xs)`` on the GPU equals compute_s bit for bit in cross_target mode."""
    import cupy as cp

    config.determinism = "cross_target"
    try:
        dev = [cp.asarray(x) for x in xs] if config.memory == "device" else xs
        got = ol.compute_g(make(*dev))
        kind = cp.ndarray if config.memory == "device" else np.ndarray
        assert all(type(g) is kind for g in (got if isinstance(got, tuple) else (got,)))
        gpu = _host(got)
        seq = np.asarray(ol.compute_s(make(*xs)))
        assert gpu.dtype == seq.dtype and gpu.tobytes() == seq.tobytes()
    finally:
        config.determinism = "deterministic"


@pytest.mark.parametrize("n", [1, 65, 4096, 4097, 1 << 14, 1 << 16, (1 << 16) + 3, (1 << 20) + 1])
def test_gpu_fold_all_of_an_array_equals_compute_s(n, memory):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    _same_as_s(lambda a: ol.fold_all(add, 0.0, a), [x])
    _same_as_s(lambda a: ol.fold_all(keep_first, np.float32(0.0), a), [x])  # (contiguous runs)
    _same_as_s(lambda a: ol.fold1(keep_first, a), [x])


@pytest.mark.parametrize("n", [5000, (1 << 20) + 7, (1 << 24) + 1])
def test_gpu_fold_of_a_producer_rows_and_tuples_equal_compute_s(n, memory):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    _same_as_s(lambda a: ol.fold_all(add, 0.0, ol.map(square, a)), [x])
    rows = rng.standard_normal((3, n // 3)).astype(np.float64)
    _same_as_s(lambda a: ol.fold1(add, a), [rows])
    if n < 1 << 22:
        comps = [rng.integers(-2, 3, n, dtype=np.int64) for _ in range(4)]
        _same_as_s(lambda *c: ol.fold_all(matmul2, (1, 0, 0, 1), tuple(c)), comps)


def test_gpu_warm_calls_of_a_kept_fold_read_their_inputs_anew(monkeypatch):
    import cupy as cp

    monkeypatch.setattr(config, "memory", "device")
    for n in (4096, 1 << 16, 1 << 20):
        x = cp.ones(n, cp.float32)
        node = ol.fold_all(add, 0.0, x)
        sq = ol.fold_all(add, 0.0, ol.map(square, x))
        for k in range(4):
            x[:] = k + 1.0
            assert float(ol.compute_g(node)) == n * (k + 1.0)
            assert float(ol.compute_g(sq)) == n * (k + 1.0) ** 2
