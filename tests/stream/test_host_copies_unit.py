"""The streamed pipeline's host copies (``offload.stream.execute.copy_jobs``): split over
the host threads along the leading axis, never below ``COPY_PIECE`` bytes a part, every
element copied once, failures raised by ``wait``."""

from __future__ import annotations

import importlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

pytestmark = pytest.mark.unit

# (by name: the package's own ``execute`` is a function)
execute = importlib.import_module("offload.stream.execute")


@pytest.mark.parametrize(
    "shape", [(0,), (1,), (7, 3), (1 << 20,), ((1 << 20) + 5, 3), ((1 << 22) + 3,)]
)
def test_copy_jobs_copy_every_element_once(
    shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(execute, "HOST_THREADS", 4)
    src = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    dst = np.full(shape, -1, np.float32)
    with ThreadPoolExecutor(4) as pool:
        jobs = execute.copy_jobs(pool, dst, src)
        execute.wait(jobs)
    np.testing.assert_array_equal(dst, src)
    assert len(jobs) <= 4
    if src.nbytes >= 4 * execute.COPY_PIECE:
        assert len(jobs) == 4  # (large copies use every thread)
    if src.nbytes < 2 * execute.COPY_PIECE:
        assert len(jobs) == 1  # (small ones are not worth a second thread)


def test_copy_jobs_cast_and_take_strided_sources() -> None:
    src = np.arange(3 * (1 << 21), dtype=np.int64)[::3]  # (a strided view, another dtype)
    dst = np.empty(src.shape, np.float64)
    with ThreadPoolExecutor(2) as pool:
        execute.wait(execute.copy_jobs(pool, dst, src))
    np.testing.assert_array_equal(dst, src.astype(np.float64))


def test_wait_raises_a_failed_copy() -> None:
    dst = np.empty((4, 2), np.float32)
    with ThreadPoolExecutor(2) as pool, pytest.raises(ValueError):
        execute.wait(execute.copy_jobs(pool, dst, np.zeros((4, 3), np.float32)))


def test_host_threads_are_the_usable_cores() -> None:
    assert 1 <= execute.HOST_THREADS <= 32
    assert execute.HOST_THREADS == min(32, execute._cores())
