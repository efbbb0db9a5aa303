"""permute, scatter and filter under the CUDA simulator: the deterministic sorted-group
path, native atomics, the compare-and-swap loop, out-of-range faults."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload.acc.filter import filter as ofilter
from offload.acc.permute import IGNORE, PermuteIndexError, permute, scatter
from offload.acc.skeletons.direct import compute
from tests.acc.sim_lane import needs_simulator
from tests.acc.skeleton_refs import add, later, ref_permute

pytestmark = [pytest.mark.sim, needs_simulator]

rng = np.random.default_rng(12)
KEYS = rng.integers(0, 6, 150)
VALS = rng.standard_normal(150)


def by_key(i: int) -> int:
    return KEYS[i] if i % 7 != 0 else IGNORE


@pytest.mark.parametrize("mode", ["deterministic", "cross_target"])
def test_deterministic_permute_equals_compute_s_bit_for_bit(mode: str) -> None:
    defaults = np.linspace(0.0, 1.0, 6)
    node = permute(later, defaults, by_key, VALS)
    sim = compute(node, "gpu-sim", mode)
    assert sim.tobytes() == compute(node, "cpu-seq", mode).tobytes()
    assert sim.tobytes() == ref_permute(later, defaults, by_key, VALS, IGNORE).tobytes()


@pytest.mark.parametrize(
    ("dtype", "f"), [("int64", add), ("int32", add), ("float32", add), ("float64", later)]
)
def test_fast_mode_atomics_and_cas(dtype: str, f: Any) -> None:
    a = (VALS * 10).astype(dtype)
    defaults = np.zeros(6, dtype)
    got = compute(permute(f, defaults, by_key, a), "gpu-sim", "fast")
    want = ref_permute(f, defaults, by_key, a, IGNORE)
    if dtype.startswith("int") or f is add:
        np.testing.assert_allclose(got, want, rtol=1e-5)
    else:  # a non-commutative combine under atomics: only the multiset of inputs is fixed
        assert got.shape == want.shape and np.isfinite(got).all()


def bigger(a: Any, b: Any) -> Any:
    return max(a, b)


def bits_or(a: Any, b: Any) -> Any:
    return a | b


@pytest.mark.parametrize(("dtype", "f"), [("float32", bigger), ("uint32", bits_or),
                                          ("int64", bits_or)])  # fmt: skip
def test_compare_and_swap_loop_gives_exact_results_for_order_free_combines(
    dtype: str, f: Any
) -> None:
    a = (np.abs(VALS) * 1000).astype(dtype)
    defaults = np.zeros(6, dtype)
    got = compute(permute(f, defaults, by_key, a), "gpu-sim", "fast")
    np.testing.assert_array_equal(got, ref_permute(f, defaults, by_key, a, IGNORE))


def test_out_of_range_destination_faults_in_the_simulator() -> None:
    def ix(i: int) -> tuple[int, int]:
        return (i, 9) if i == 3 else (i % 2, 0)

    with pytest.raises(PermuteIndexError, match=r"\(3,\) to \(3, 9\)"):
        compute(permute(add, np.zeros((2, 2)), ix, np.ones(5)), "gpu-sim")


def test_scatter_and_filter_in_the_simulator() -> None:
    got = compute(scatter(np.array([2, 0, 2]), np.zeros(3), np.array([1.0, 2.0, 3.0])), "gpu-sim")
    np.testing.assert_array_equal(got, [2.0, 0.0, 3.0])
    a = np.arange(70) % 9

    def small(x: Any) -> Any:
        return x < 4

    np.testing.assert_array_equal(compute(ofilter(small, a), "gpu-sim"), a[a < 4])
