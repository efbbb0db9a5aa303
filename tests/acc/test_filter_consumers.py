"""Nodes over a ``filter``: they read the filtered result's length, known only once the
filter is computed (its ``shape`` is the source's, an upper bound). The graph scheduler
takes the extents such a node holds anew when the filter's result replaces it
(``refit``: a fold's ``n``, a stencil's extents, ``reverse``'s ``n``, a slice's fixed
indices, a flattening reshape, a segmented fold's check of its segments), and a permute
and a scatter read their computed sources' shapes.
Before, each of these read past the end of the result (garbage)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import offload as ol
from tests.acc.sim_lane import needs_simulator

ALL = ol.ALL
F = np.array([1003, -1, 1002, -5, -9, 1001, -7, -8], np.int32)
K = F[F > 0]


def positive(v: Any) -> Any:
    return v > 0


def add(a: Any, b: Any) -> Any:
    return a + b


def twice(v: Any) -> Any:
    return v * 2


def near(get: Any) -> Any:
    return get(-1) + get(1) * 10


def parity(i: Any) -> Any:
    return i % 2


def _kept() -> Any:
    return ol.filter(positive, F)


CASES = {
    "fold_all": (lambda: ol.fold_all(add, 0, _kept()), np.int32(K.sum())),
    "fold": (lambda: ol.fold(add, 0, _kept()), np.int32(K.sum())),
    "fold1": (lambda: ol.fold1(add, _kept()), np.int32(K.sum())),
    "fold rows": (lambda: ol.fold(add, 0, ol.extend((2, ALL), _kept())), np.full(2, K.sum())),
    "fold_all rows": (lambda: ol.fold_all(add, 0, ol.extend((2, ALL), _kept())), 2 * K.sum()),
    "reverse": (lambda: ol.reverse(_kept()), K[::-1]),
    "reverse of map": (lambda: ol.reverse(ol.map(twice, _kept())), (2 * K)[::-1]),
    "slice last": (lambda: ol.slice(_kept(), (-1,)), np.array(K[-1])),
    "stencil clamp": (
        lambda: ol.stencil(near, _kept(), "clamp"),
        np.r_[K[:1], K[:-1]] + np.r_[K[1:], K[-1:]] * 10,
    ),
    "stencil wrap": (
        lambda: ol.stencil(near, _kept(), "wrap"),
        np.roll(K, 1) + np.roll(K, -1) * 10,
    ),
    "permute": (
        lambda: ol.permute(add, np.zeros(2, np.int32), parity, _kept()),
        np.array([K[0] + K[2], K[1]], np.int32),
    ),
    "scanl1": (lambda: ol.scanl1(add, _kept()), np.cumsum(K, dtype=np.int32)),
    "zip_with": (lambda: ol.zip_with(add, _kept(), _kept()), 2 * K),
}


def _check(compute: Any, name: str) -> None:
    make, want = CASES[name]
    got = compute(make())
    if hasattr(got, "get"):
        got = got.get()
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want.astype(got.dtype))


@pytest.mark.cpu
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p])
def test_a_node_over_a_filter_reads_its_length(compute: Any, name: str) -> None:
    _check(compute, name)


@pytest.mark.cpu
def test_fold1_over_an_empty_filter_result_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="empty axis"):
        ol.compute_s(ol.fold1(add, ol.filter(positive, -np.abs(F))))


@pytest.mark.cpu
def test_segments_and_scatter_indices_are_checked_against_the_computed_length() -> None:
    got = ol.compute_s(ol.fold_seg(add, 0, _kept(), np.array([1, 2])))
    np.testing.assert_array_equal(got, [K[0], K[1] + K[2]])
    with pytest.raises(ValueError, match="sum to 8 but the axis has 3"):
        ol.compute_s(ol.fold_seg(add, 0, _kept(), np.array([4, 4])))
    with pytest.raises(ValueError, match="sum to 9 but the axis has 8"):
        ol.fold_seg(add, 0, _kept(), np.array([5, 4]))  # (past the bound: when built)
    got = ol.compute_p(ol.scatter(np.array([2, 0, 1]), np.zeros(3, np.int32), _kept()))
    np.testing.assert_array_equal(got, [K[1], K[2], K[0]])
    with pytest.raises(ValueError, match="'to' has 8 indices for 3 elements"):
        ol.compute_s(ol.scatter(np.arange(8), np.zeros(8, np.int32), _kept()))


@pytest.mark.cpu
def test_a_reshape_that_no_longer_fits_is_a_value_error() -> None:
    node = ol.reshape(ol.extend((2, ALL), _kept()), (4, 4))
    with pytest.raises(ValueError, match="cannot reshape"):
        ol.compute_s(node)


SIM_CASES = ["fold_all", "fold_all rows", "reverse", "stencil wrap", "permute"]


@pytest.mark.sim
@needs_simulator
@pytest.mark.parametrize("name", SIM_CASES)
def test_a_node_over_a_filter_reads_its_length_sim(name: str) -> None:
    _check(ol.compute_g, name)
