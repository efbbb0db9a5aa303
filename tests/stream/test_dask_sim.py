"""offload.dask with target="g" under the simulator: the same windowed kernels on the
GPU's (simulated) path, block by block, equal compute_s bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
old = pytest.importorskip("offload.dask")

pytestmark = pytest.mark.sim

XN = np.random.default_rng(2).random((9, 6)).astype(np.float32)
X = da.from_array(XN, chunks=((4, 1, 4), (2, 4)))


def lap(i, j):
    c = X[i, j] * np.float32(-4.0)
    if 0 < i < 8 and 0 < j < 5:
        c += X[i - 1, j] + X[i + 1, j] + X[i, j - 1] + X[i, j + 1]
    return c


def lap_np(i, j):
    c = XN[i, j] * np.float32(-4.0)
    if 0 < i < 8 and 0 < j < 5:
        c += XN[i - 1, j] + XN[i + 1, j] + XN[i, j - 1] + XN[i, j + 1]
    return c


@pytest.fixture(autouse=True)
def _simulator():
    saved = ol.config.gpu_simulator
    ol.config.gpu_simulator = True
    yield
    ol.config.gpu_simulator = saved


def test_a_2d_stencil_on_dask_blocks_with_the_gpu_target():
    y = old.compute((9, 6), lap, target="g")
    with dask.config.set(scheduler="threads"):
        got = y.compute()
    assert got.dtype == np.float32
    assert got.tobytes() == ol.compute_s((9, 6), lap_np).tobytes()
