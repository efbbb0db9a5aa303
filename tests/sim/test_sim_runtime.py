"""compute_g under the CUDA simulator as a user calls it: math errors give NumPy's NaN/inf
(the values compute_s gives), never an exception; host threads may launch at once."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

import offload as ol

pytestmark = pytest.mark.sim

X = np.array([0.0, 1.0, 2.0, -1.0])

MATH_ERRORS: dict[str, Any] = {
    "sqrt_of_negative_is_nan": lambda i: math.sqrt(X[i] - 1.0),
    "exp_overflow_is_inf": lambda i: math.exp(X[i] * 1000.0),
    "log_of_zero_is_minus_inf_and_of_negative_nan": lambda i: math.log(X[i]),
    "negative_power_of_zero_is_inf": lambda i: X[i] ** -1.0,
    "math_pow_of_zero_is_inf": lambda i: math.pow(X[i], -1.0),
    "fmod_by_zero_is_nan": lambda i: math.fmod(1.0, X[i]),
    "ceil_past_int64_casts_like_compute_s": lambda i: math.ceil(X[i] * 1e300),
    "floor_past_int64_casts_like_compute_s": lambda i: math.floor(X[i] * 1e300),
    "acos_out_of_domain_is_nan": lambda i: math.acos(X[i] * 2.0),
    "atanh_of_one_is_inf": lambda i: math.atanh(X[i]),
}


@pytest.mark.parametrize("name", sorted(MATH_ERRORS))
def test_math_errors_give_compute_s_values_not_exceptions(name):
    fn = MATH_ERRORS[name]
    want = ol.compute_s(len(X), fn)
    got = ol.compute_g(len(X), fn)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_math_errors_in_float32_keep_float32():
    y = X.astype(np.float32)

    def f(i: int) -> Any:
        return np.sqrt(y[i] - np.float32(1.0)) + np.exp(y[i] * np.float32(100.0))

    want = ol.compute_s(len(y), f)
    got = ol.compute_g(len(y), f)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_eight_threads_calling_compute_g_at_once_all_get_their_results():
    a = np.arange(64.0)

    def call(k: int) -> Any:
        return ol.compute_g(64, lambda i: a[i] * k + 1.0)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(call, range(32)))
    for k, got in enumerate(results):
        np.testing.assert_array_equal(got, a * k + 1.0)
