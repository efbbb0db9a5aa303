"""Host copies of the staging (``offload.runtime.staging``: the streamed pipeline's and
``to_device``'s): split over the host threads along the leading axis, never below
``COPY_PIECE`` bytes a part, every element copied once, failures raised by ``wait``; which
host arrays ``to_device`` stages."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from offload.runtime import staging
from tests.stream import fake_cupy

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "shape", [(0,), (1,), (7, 3), (1 << 20,), ((1 << 20) + 5, 3), ((1 << 22) + 3,)]
)
def test_copy_jobs_copy_every_element_once(
    shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(staging, "HOST_THREADS", 4)
    src = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    dst = np.full(shape, -1, np.float32)
    with ThreadPoolExecutor(4) as pool:
        jobs = staging.copy_jobs(pool, dst, src)
        staging.wait(jobs)
    np.testing.assert_array_equal(dst, src)
    assert len(jobs) <= 4
    if src.nbytes >= 4 * staging.COPY_PIECE:
        assert len(jobs) == 4  # (large copies use every thread)
    if src.nbytes < 2 * staging.COPY_PIECE:
        assert len(jobs) == 1  # (small ones are not worth a second thread)


def test_copy_jobs_cast_and_take_strided_sources() -> None:
    src = np.arange(3 * (1 << 21), dtype=np.int64)[::3]  # (a strided view, another dtype)
    dst = np.empty(src.shape, np.float64)
    with ThreadPoolExecutor(2) as pool:
        staging.wait(staging.copy_jobs(pool, dst, src))
    np.testing.assert_array_equal(dst, src.astype(np.float64))


def test_wait_raises_a_failed_copy() -> None:
    dst = np.empty((4, 2), np.float32)
    with ThreadPoolExecutor(2) as pool, pytest.raises(ValueError):
        staging.wait(staging.copy_jobs(pool, dst, np.zeros((4, 3), np.float32)))


def test_host_threads_are_the_usable_cores() -> None:
    assert 1 <= staging.HOST_THREADS <= 32
    assert staging.HOST_THREADS == min(32, staging._cores())


def test_to_device_stages_large_contiguous_host_arrays_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(staging, "HOST_THREADS", 4)
    cp = fake_cupy.cp
    big = np.zeros(staging.STAGE_MIN // 4, np.float32)
    assert staging.stages(cp, big)
    assert not staging.stages(cp, big[:-1])  # below STAGE_MIN
    assert not staging.stages(cp, np.zeros((2, staging.STAGE_MIN // 4), np.float32)[:, ::2])
    assert not staging.stages(cp, big.tolist()[:4])
    try:
        assert not staging.stages(cp, fake_cupy.pin(big))  # page-locked: the DMA reads it
    finally:
        fake_cupy.unpin_all()
    monkeypatch.setattr(staging, "HOST_THREADS", 1)
    assert not staging.stages(cp, big)  # one core: one pageable copy is as good


def test_pinned_memory_is_told_from_pageable_by_its_first_and_last_bytes() -> None:
    cp = fake_cupy.cp
    x = np.zeros(1000)
    try:
        assert not staging.pinned(cp, x)
        fake_cupy.pin(x[:999])  # (its last byte is not)
        assert not staging.pinned(cp, x)
        fake_cupy.pin(x[999:])
        assert staging.pinned(cp, x) and staging.pinned(cp, x[10:20])
        assert not staging.pinned(cp, x[::2])  # (not contiguous: staged)
        assert not staging.pinned(cp, x.tolist()) and not staging.pinned(cp, x[:0])
        assert not staging.pinned(object(), x)  # (no pointerGetAttributes: pageable)
    finally:
        fake_cupy.unpin_all()
