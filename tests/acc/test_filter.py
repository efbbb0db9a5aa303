"""filter on the CPU targets against NumPy's boolean indexing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.acc.filter import filter as ofilter
from offload.acc.skeletons.direct import compute

pytestmark = pytest.mark.cpu

TARGETS = ["cpu-seq", "cpu-par"]


@settings(max_examples=25)
@given(n=st.integers(0, 500), cut=st.floats(-0.5, 1.5), seed=st.integers(0, 2**32 - 1))
@pytest.mark.parametrize("target", TARGETS)
def test_filter_keeps_order_like_boolean_indexing(
    target: str, n: int, cut: float, seed: int
) -> None:
    a = np.random.default_rng(seed).random(n).astype(np.float32)

    def pred(x: Any) -> Any:
        return x < cut

    got = compute(ofilter(pred, a), target)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, a[a < np.float32(cut)])


@pytest.mark.parametrize("dtype", ["int8", "uint32", "int64", "float64", "bool"])
def test_filter_dtypes(dtype: str) -> None:
    a = (np.arange(50) % 7).astype(dtype)
    is_bool = dtype == "bool"

    def odd(x: Any) -> Any:
        return x if is_bool else x % 2 == 1

    for target in TARGETS:
        got = compute(ofilter(odd, a), target)
        want = a[a.astype(np.int64) % 2 == 1] if dtype != "bool" else a[a]
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(got, want)


def test_filter_of_a_tuple_array() -> None:
    keys = np.array([5, 1, 7, 2])
    vals = np.array([0.5, 1.5, 2.5, 3.5])

    def big(kv: Any) -> Any:
        return kv[0] > 3

    for target in TARGETS:
        k, v = compute(ofilter(big, (keys, vals)), target)
        np.testing.assert_array_equal(k, [5, 7])
        np.testing.assert_array_equal(v, [0.5, 2.5])


def test_a_changed_captured_scalar_is_never_stale() -> None:
    a = np.arange(10)
    limit = 3

    def below(x: Any) -> Any:
        return x < limit

    first = compute(ofilter(below, a), "cpu-seq")
    limit = 6
    second = compute(ofilter(below, a), "cpu-seq")
    np.testing.assert_array_equal(first, np.arange(3))
    np.testing.assert_array_equal(second, np.arange(6))


def test_filter_needs_a_vector() -> None:
    with pytest.raises(ValueError, match="1-D"):
        ofilter(lambda x: x > 0, np.zeros((2, 2)))
