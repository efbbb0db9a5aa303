"""A captured host array in device mode is staged through pinned pieces by the host
threads (``offload.runtime.staging.to_device``): the device copy holds every byte, at
sizes around the piece and ring boundaries, in calls back to back (a piece is written
again only once its copy is done) and from several threads at once; ``compute_g`` over
such an array gives compute_s's values."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import offload as ol
from offload.runtime import staging

pytestmark = pytest.mark.gpu

P = staging.PIECE


def _host(nbytes: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 255, nbytes, dtype=np.uint8)


@pytest.mark.parametrize(
    "nbytes",
    [staging.STAGE_MIN, P - 1, P, P + 1, 3 * P, staging.RING * P + 12345, 7 * P + 3],
)
def test_to_device_copies_every_byte(nbytes: int) -> None:
    import cupy

    x = _host(nbytes, nbytes % 97)
    stream = cupy.cuda.get_current_stream()
    got = staging.to_device(cupy, x, stream.ptr)
    stream.synchronize()
    assert got.shape == x.shape and got.dtype == x.dtype
    assert np.array_equal(cupy.asnumpy(got), x)


def test_back_to_back_and_threaded_copies_do_not_overwrite_pieces_in_flight() -> None:
    import cupy

    xs = [_host(2 * P + 1000 * k, k) for k in range(6)]
    stream = cupy.cuda.get_current_stream()
    outs = [staging.to_device(cupy, x, stream.ptr) for x in xs]
    stream.synchronize()
    assert all(np.array_equal(cupy.asnumpy(o), x) for o, x in zip(outs, xs, strict=True))

    def one(x: np.ndarray) -> bool:
        s = cupy.cuda.Stream(non_blocking=True)
        with s:
            out = staging.to_device(cupy, x, s.ptr)
        s.synchronize()
        return bool(np.array_equal(cupy.asnumpy(out), x))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(one, xs))


def test_compute_g_of_a_large_host_array_equals_compute_s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ol.config, "memory", "device")
    x = np.random.default_rng(3).random(3 * P // 8 + 17)  # float64, ~3 pieces

    def f(i):
        return x[i] * 2.0 + 1.0

    import cupy

    assert staging.stages(cupy, x)
    got = ol.compute_g(x.shape, f)
    got = got.get() if hasattr(got, "get") else np.asarray(got)
    assert got.tobytes() == ol.compute_s(x.shape, f).tobytes()


def test_page_locked_host_memory_is_told_from_pageable() -> None:
    import cupyx

    pinned = cupyx.empty_pinned(1 << 20, np.float32)
    assert staging.pinned(cupy_module(), pinned)
    assert not staging.pinned(cupy_module(), np.empty(1 << 20, np.float32))


def cupy_module():
    import cupy

    return cupy
