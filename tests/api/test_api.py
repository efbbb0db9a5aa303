"""The public API end to end on the CPU backends: shapes, dtypes, out=, caching, errors."""

from __future__ import annotations

import os
import traceback

import numpy as np
import pytest

import offload as ol
from offload import driver

pytestmark = pytest.mark.cpu

COMPUTES = [ol.compute_s, ol.compute_p]

a = np.arange(12, dtype=np.float32).reshape(3, 4)
scale = 2
weights = np.linspace(0.0, 1.0, 7)


def square_plus(i, j):
    x = a[i, j]
    return x * x if x > 5 else -x


@pytest.mark.parametrize("compute", COMPUTES)
def test_compute_matches_python_and_keeps_float32(compute):
    got = compute(a.shape, square_plus)
    want = np.array([[square_plus(i, j) for j in range(4)] for i in range(3)], dtype=np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("compute", COMPUTES)
def test_int_shape_and_lambda(compute):
    got = compute(5, lambda i: i * 3 - 1)
    np.testing.assert_array_equal(got, np.arange(5) * 3 - 1)
    assert got.dtype == np.int64


@pytest.mark.parametrize("compute", COMPUTES)
def test_rank_zero_and_empty_shapes(compute):
    assert compute((), lambda: 7.5).shape == ()
    assert float(compute((), lambda: 7.5)) == 7.5
    empty = compute((0, 3), lambda i, j: i + j)
    assert empty.shape == (0, 3)


@pytest.mark.parametrize("compute", COMPUTES)
def test_tuple_result_gives_struct_of_arrays(compute):
    re, im = compute(4, lambda i: (i * 1.5, i - 2))
    np.testing.assert_array_equal(re, np.arange(4) * 1.5)
    np.testing.assert_array_equal(im, np.arange(4) - 2)
    assert re.dtype == np.float64 and im.dtype == np.int64


@pytest.mark.parametrize("compute", COMPUTES)
def test_dtype_override_and_out(compute):
    got = compute(4, lambda i: i * 0.5, dtype=np.float32)
    assert got.dtype == np.float32
    out = np.full(4, -1.0)
    res = compute(4, lambda i: i * 0.25, out=out)
    assert res is out
    np.testing.assert_array_equal(out, np.arange(4) * 0.25)


def scaled(i):
    return i * scale


@pytest.mark.parametrize("compute", COMPUTES)
def test_changed_captured_scalar_is_never_stale(compute):
    global scale
    try:
        scale = 2
        np.testing.assert_array_equal(compute(3, scaled), [0, 2, 4])
        scale = 5
        np.testing.assert_array_equal(compute(3, scaled), [0, 5, 10])
        scale = 0.5  # a type change recompiles
        np.testing.assert_array_equal(compute(3, scaled), [0.0, 0.5, 1.0])
    finally:
        scale = 2


@pytest.mark.parametrize("compute", COMPUTES)
def test_changed_captured_array_is_never_stale(compute):
    def weighted(i):
        return weights[i] * 2

    global weights
    saved = weights
    try:
        np.testing.assert_allclose(compute(7, weighted), saved * 2)
        weights = np.arange(7.0)
        np.testing.assert_allclose(compute(7, weighted), np.arange(7.0) * 2)
    finally:
        weights = saved


def test_warm_call_does_not_lower_again(monkeypatch):
    def cube(i):
        return i * i * i

    ol.compute_s(4, cube)
    calls = []
    real = driver.check_and_lower
    monkeypatch.setattr(driver, "check_and_lower", lambda *a: calls.append(a) or real(*a))
    for _ in range(3):
        np.testing.assert_array_equal(ol.compute_s(4, cube), np.arange(4) ** 3)
    assert calls == []


def test_bad_shapes_and_arguments_raise_clear_python_errors():
    with pytest.raises(ValueError, match=">= 0"):
        ol.compute_s((-1,), lambda i: i)
    with pytest.raises(TypeError, match="shape"):
        ol.compute_s((2.5,), lambda i: i)
    with pytest.raises(TypeError, match="callable"):
        ol.compute_s((2,), 3)
    with pytest.raises(ValueError, match="out="):
        ol.compute_s(3, lambda i: i, out=np.zeros(4, dtype=np.int64))


def test_rank_mismatch_is_a_located_error():
    def two(i, j):
        return i + j

    with pytest.raises(ol.OffloadError) as info:
        ol.compute_s((3,), two)
    assert "takes 2 index argument(s) but the shape has rank 1" in str(info.value)
    assert "test_api.py" in str(info.value)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def test_user_errors_show_no_offload_frames():
    with pytest.raises(ol.OffloadError) as info:
        ol.compute_s(4, lambda i: fib(i))
    message = str(info.value)
    package = os.path.dirname(os.path.abspath(ol.__file__)) + os.sep  # (the checkout's own
    # folder may be called offload too: only the package's files are compiler frames)
    assert "test_api.py" in message
    assert package not in message and "numba" not in message.lower()
    frames = traceback.extract_tb(info.value.__traceback__)
    internal = [f for f in frames if f.filename.startswith(package)]
    assert {f.name for f in internal} <= {"compute_s", "_compute"}, internal


xs = np.arange(100, dtype=np.float32)


def strided_sum(c):
    s = np.float32(0)
    for k in range(c, 100, 10):  # the loop counter starts at the index parameter
        s += xs[k]
    return s


@pytest.mark.parametrize("compute", COMPUTES)
def test_loop_counter_seeded_by_index_stays_integral(compute):
    want = np.array([xs[c::10].sum() for c in range(10)], dtype=np.float32)
    np.testing.assert_array_equal(compute(10, strided_sum), want)


limit = 5


def below_limit(i):
    return i + limit


def test_captured_int_beyond_int64_is_a_located_error_on_cold_and_warm_calls():
    global limit
    try:
        limit = 5
        np.testing.assert_array_equal(ol.compute_s(3, below_limit), [5, 6, 7])
        limit = 2**70  # the warm path's type guard must not let it reach the kernel
        with pytest.raises(
            ol.TypeMismatch, match="captured 'limit' = 1180591620717411303424 does not fit int64"
        ):
            ol.compute_s(3, below_limit)
    finally:
        limit = 5


def _add1(x):
    return x + 1


def _times10(x):
    return x * 10


def _apply(h):
    return lambda i: h(i)


@pytest.mark.parametrize("compute", COMPUTES)
def test_same_code_with_another_helper_in_its_closure_is_not_stale(compute):
    np.testing.assert_array_equal(compute(3, _apply(_add1)), [1, 2, 3])
    np.testing.assert_array_equal(compute(3, _apply(_times10)), [0, 10, 20])
    np.testing.assert_array_equal(compute(3, _apply(_add1)), [1, 2, 3])


def helper(x):
    return x + 1


def calls_helper(i):
    return helper(i)


def test_rebinding_a_global_helper_recompiles():
    global helper
    saved = helper
    try:
        np.testing.assert_array_equal(ol.compute_s(3, calls_helper), [1, 2, 3])
        helper = lambda x: x * 10  # noqa: E731
        np.testing.assert_array_equal(ol.compute_s(3, calls_helper), [0, 10, 20])
    finally:
        helper = saved


def test_int_power_with_a_possibly_negative_exponent_is_a_located_error():
    with pytest.raises(ol.TypeMismatch, match="exponent that may be negative"):
        ol.compute_s((2, 2), lambda i, j: (i + 2) ** (j - 1))
    # an index or a range counter is a known non-negative exponent
    np.testing.assert_array_equal(ol.compute_s((2, 2), lambda i, j: (i + 2) ** j), [[1, 2], [1, 3]])


def test_out_must_be_an_array():
    with pytest.raises(TypeError, match="out= takes an array"):
        ol.compute_s(3, lambda i: i, out=[0, 0, 0])


def test_a_lambda_compiled_from_inside_another_lambda_on_the_same_line():
    run = lambda: ol.compute_s(3, lambda i: i + 1)  # noqa: E731
    np.testing.assert_array_equal(run(), [1, 2, 3])
