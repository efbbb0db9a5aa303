"""The driver's warm lane (entry by code identity, generated capture fetcher, type guard)
never returns a stale or wrongly specialised result."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from offload import driver
from offload.config import config
from offload.diagnostics import OffloadError

pytestmark = pytest.mark.cpu

COMPUTES = [ol.compute_s, ol.compute_p]

k = 3
arr = np.arange(6.0)


def times_k(i):
    return arr[i] * k


@pytest.fixture
def restore_globals():
    global k, arr
    saved = k, arr
    yield
    k, arr = saved


@pytest.mark.parametrize("compute", COMPUTES)
def test_rebound_scalar_of_the_same_type_is_read_on_every_warm_call(compute, restore_globals):
    global k
    for value in (3, 4, -2, 10**12):
        k = value
        np.testing.assert_array_equal(compute(6, times_k), np.arange(6.0) * value)


@pytest.mark.parametrize("compute", COMPUTES)
def test_scalar_type_change_misses_the_memo_and_recompiles(compute, restore_globals):
    global k, arr
    arr = np.arange(6, dtype=np.int64)
    k = 2
    assert compute(6, times_k).dtype == np.int64
    k = 0.5
    got = compute(6, times_k)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, np.arange(6) * 0.5)


@pytest.mark.parametrize("compute", COMPUTES)
def test_array_mutated_in_place_between_calls_is_not_stale(compute, restore_globals):
    global arr
    arr = np.arange(6.0)
    compute(6, times_k)
    arr[:] = 7.0
    np.testing.assert_array_equal(compute(6, times_k), np.full(6, 21.0))


def test_array_reshaped_in_place_to_another_rank_is_not_run_with_the_old_kernel(
    restore_globals,
):
    global arr
    arr = np.arange(6.0)
    ol.compute_s(6, times_k)
    arr.shape = (2, 3)  # same object, rank 2: the guard must see it
    # arr[i] is now a row of the rank-2 array: the element is an array, not a number
    with pytest.raises(OffloadError, match="cannot return an elementwise array expression"):
        ol.compute_s(6, times_k)


def test_rebound_array_of_another_dtype_changes_the_result_dtype(restore_globals):
    global arr
    arr = np.arange(6, dtype=np.float32)
    assert ol.compute_s(6, times_k).dtype == np.float32
    arr = np.arange(6, dtype=np.int32)
    got = ol.compute_s(6, times_k)
    assert got.dtype == np.int32  # NumPy 2: a Python int is weak, int32 * int -> int32
    np.testing.assert_array_equal(got, np.arange(6) * 3)


def test_changed_options_and_dtype_arguments_miss_the_memo(restore_globals):
    ol.compute_s(6, times_k)
    assert ol.compute_s(6, times_k, dtype=np.float32).dtype == np.float32
    assert ol.compute_s(6, times_k).dtype == np.float64
    saved = config.bounds_check
    try:
        config.bounds_check = True
        assert driver.config.compile_options().bounds_check
        np.testing.assert_array_equal(ol.compute_s(6, times_k), np.arange(6.0) * 3)
        entry = driver._TABLE[(ol.targets.backend_named("cpu-seq"), driver._table_key(times_k))]
        assert entry.memo is not None and entry.memo.options.bounds_check
    finally:
        config.bounds_check = saved


def test_warm_call_does_not_rebuild_the_capture_type_key(monkeypatch, restore_globals):
    ol.compute_s(6, times_k)
    calls = []
    real = driver.capture_type_key
    monkeypatch.setattr(driver, "capture_type_key", lambda v: calls.append(v) or real(v))
    for value in (5, 6, 7):
        global k
        k = value
        np.testing.assert_array_equal(ol.compute_s(6, times_k), np.arange(6.0) * value)
    assert calls == []


def test_lambda_recreated_on_every_call_reuses_its_entry(monkeypatch):
    lowered = []
    real = driver.check_and_lower
    monkeypatch.setattr(driver, "check_and_lower", lambda *a: lowered.append(a) or real(*a))
    results = [ol.compute_s(4, lambda i: i * n) for n in range(4)]
    assert len(lowered) <= 1  # at most the first call lowers
    for n, got in enumerate(results):
        np.testing.assert_array_equal(got, np.arange(4) * n)


ONE = {0: lambda: 1.0, 1: lambda i: 1.0, 2: lambda i, j: 1.0}


@pytest.mark.parametrize(
    ("shape", "want"),
    [(5, (5,)), ((2, 3), (2, 3)), ([2, 3], (2, 3)), ((np.int64(2), 3), (2, 3)), ((), ())],
)
def test_shape_forms_normalise_to_a_tuple_of_ints(shape, want):
    assert ol.compute_s(shape, ONE[len(want)]).shape == want


@pytest.mark.parametrize("shape", [True, (2, -1), -3, (2.0, 3), "4", (True, 2)])
def test_bad_shapes_are_refused_by_the_checking_path(shape):
    with pytest.raises((TypeError, ValueError)):
        ol.compute_s(shape, ONE[2])


def _simulator_on() -> bool:
    import numba

    return bool(numba.config.ENABLE_CUDASIM)


@pytest.mark.sim
@pytest.mark.skipif(
    not _simulator_on(),
    reason="sim lane: NUMBA_ENABLE_CUDASIM=1 python -m pytest -m sim tests/api/test_warm_path.py",
)
def test_gpu_simulator_warm_calls_read_changed_scalars_and_arrays(restore_globals):
    from offload.ptx.sim import SimBackend

    global k, arr
    be = SimBackend()
    arr = np.arange(6.0)
    for value in (3, 4):
        k = value
        np.testing.assert_array_equal(driver.run(be, times_k, (6,)), np.arange(6.0) * value)
    arr[:] = 1.0
    np.testing.assert_array_equal(driver.run(be, times_k, (6,)), np.full(6, 4.0))
    arr = np.arange(6.0) + 1
    np.testing.assert_array_equal(driver.run(be, times_k, (6,)), (np.arange(6.0) + 1) * 4)
    k = 0.5
    np.testing.assert_array_equal(driver.run(be, times_k, (6,)), (np.arange(6.0) + 1) * 0.5)
