"""permute and scatter on the CPU targets against Python loops in source order."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.acc.permute import IGNORE, PermuteIndexError, permute, scatter
from offload.acc.skeletons.direct import compute
from offload.diagnostics import OffloadError, TypeMismatch
from tests.acc.skeleton_refs import add, bitor, later, ref_permute

pytestmark = pytest.mark.cpu

TARGETS = ["cpu-seq", "cpu-par"]


@settings(max_examples=25)
@given(n=st.integers(0, 300), bins=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
@pytest.mark.parametrize("target", TARGETS)
def test_histogram_equals_bincount(target: str, n: int, bins: int, seed: int) -> None:
    data = np.random.default_rng(seed).integers(0, bins, n)

    def ix(i: int) -> int:
        return data[i]

    got = compute(permute(add, np.zeros(bins, np.int64), ix, np.ones(n, np.int64)), target)
    np.testing.assert_array_equal(got, np.bincount(data, minlength=bins))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mode", ["deterministic", "cross_target", "fast"])
def test_float_combine_is_applied_in_source_order(target: str, mode: str) -> None:
    rng = np.random.default_rng(1)
    data = rng.integers(0, 7, 500)
    vals = rng.standard_normal(500)
    defaults = rng.standard_normal(7)

    def ix(i: int) -> int:
        return data[i]

    got = compute(permute(later, defaults, ix, vals), target, mode)
    want = ref_permute(later, defaults, ix, vals, IGNORE)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("target", TARGETS)
def test_rank2_destinations_with_ignore(target: str) -> None:
    a = np.arange(12.0).reshape(3, 4)

    def ix(i: int, j: int) -> tuple[int, int]:
        return (j, i) if (i + j) % 3 != 0 else (IGNORE, IGNORE)

    defaults = np.full((4, 3), -1.0)
    got = compute(permute(add, defaults, ix, a), target)
    np.testing.assert_array_equal(got, ref_permute(add, defaults, ix, a, IGNORE))
    assert (defaults == -1.0).all()  # the defaults are copied, never written


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dest", [5, -1, 1000])
def test_out_of_range_destination_is_an_error_naming_the_element(target: str, dest: int) -> None:
    a = np.ones(6)

    def ix(i: int) -> int:
        return dest if i == 4 else i % 5

    with pytest.raises(PermuteIndexError, match=r"source element \(4,\) to \(" + str(dest)):
        compute(permute(add, np.zeros(5), ix, a), target)
    assert issubclass(PermuteIndexError, IndexError) and issubclass(PermuteIndexError, OffloadError)


@pytest.mark.parametrize(
    ("dtype", "f"),
    [("int8", add), ("uint16", add), ("int32", add), ("float32", add), ("bool", bitor)],
)
def test_permute_dtypes(dtype: str, f: Any) -> None:
    rng = np.random.default_rng(2)
    a = (rng.random(200) * 60).astype(dtype)
    data = rng.integers(0, 9, 200)

    def ix(i: int) -> int:
        return data[i]

    defaults = np.zeros(9, dtype)
    for target in TARGETS:
        got = compute(permute(f, defaults, ix, a), target)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, ref_permute(f, defaults, ix, a, IGNORE))


def test_tuple_permute_is_struct_of_arrays() -> None:
    vals = np.array([1.0, 2.0, 3.0, 4.0])
    keys = np.array([0, 1, 0, 0])

    def both(new: Any, old: Any) -> Any:
        return (new[0] + old[0], new[1] + old[1])

    def ix(i: int) -> int:
        return keys[i]

    for target in TARGETS:
        s, c = compute(permute(both, (np.zeros(2), np.zeros(2, np.int64)), ix,
                               (vals, np.ones(4, np.int64))), target)  # fmt: skip
        np.testing.assert_array_equal(s, [8.0, 2.0])
        np.testing.assert_array_equal(c, [3, 1])


def test_empty_source_gives_the_defaults() -> None:
    def ix(i: int) -> int:
        return i

    for target in TARGETS:
        got = compute(permute(add, np.arange(3.0), ix, np.zeros(0)), target)
        np.testing.assert_array_equal(got, [0.0, 1.0, 2.0])


def test_index_function_of_the_wrong_rank_is_a_type_error() -> None:
    def ix(i: int) -> int:
        return i

    with pytest.raises(TypeMismatch, match="rank 2"):
        compute(permute(add, np.zeros((2, 2)), ix, np.ones(2)), "cpu-seq")


@pytest.mark.parametrize("target", TARGETS)
def test_scatter_last_write_wins_and_ignore_drops(target: str) -> None:
    to = np.array([3, 1, 3, IGNORE, 0])
    a = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    got = compute(scatter(to, np.full(5, -1.0), a), target)
    np.testing.assert_array_equal(got, [5.0, 2.0, -1.0, 3.0, -1.0])


def test_scatter_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="indices for"):
        scatter(np.array([0, 1]), np.zeros(3), np.ones(3))
    with pytest.raises(TypeError, match="integer"):
        scatter(np.array([0.0, 1.0]), np.zeros(3), np.ones(2))
    with pytest.raises(ValueError, match="vector"):
        scatter(np.zeros((2, 2), np.int64), np.zeros(3), np.ones((2, 2)))
    with pytest.raises(PermuteIndexError):
        compute(scatter(np.array([0, 3]), np.zeros(3), np.ones(2)), "cpu-par")


def test_compute_p_partial_rows_are_exact_for_integers_and_stable_for_floats() -> None:
    rng = np.random.default_rng(8)
    n = 300_000  # > 2 * PARTIAL_TASK: several tasks
    keys = rng.integers(0, 1000, n)
    vals = rng.standard_normal(n)

    def ix(i: int) -> int:
        return keys[i] if i % 5 != 0 else IGNORE

    hist = compute(permute(add, np.zeros(1000, np.int64), ix, np.ones(n, np.int64)), "cpu-par")
    np.testing.assert_array_equal(hist, np.bincount(keys[np.arange(n) % 5 != 0], minlength=1000))
    first = compute(permute(add, np.zeros(1000), ix, vals), "cpu-par")
    again = compute(permute(add, np.zeros(1000), ix, vals.copy()), "cpu-par")
    assert first.tobytes() == again.tobytes()
    np.testing.assert_allclose(first, ref_permute(add, np.zeros(1000), ix, vals, IGNORE), atol=1e-9)
    seq = compute(permute(add, np.zeros(1000), ix, vals), "cpu-par", "cross_target")
    assert seq.tobytes() == compute(permute(add, np.zeros(1000), ix, vals), "cpu-seq").tobytes()


def test_a_bool_destination_is_no_index() -> None:
    # NumPy reads a bool as a mask, not as 0 or 1: the index function must give integers.
    with pytest.raises(TypeMismatch, match="bool is no index"):
        compute(permute(add, np.zeros(4), lambda i: i > 1, np.ones(4)))
