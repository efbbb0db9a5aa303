"""Skeleton collectives (scans, permute, filter) inside delayed trees, through the graph
scheduler: producers computed first, consumers fused over the materialised result."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol

pytestmark = pytest.mark.cpu

X = np.arange(1, 11, dtype=np.float32)


def add(a, b):
    return a + b


def dbl(v):
    return v * 2


def big(v):
    return v > 4


def mod3(i):
    return i % 3


@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p])
def test_scan_inside_a_tree(compute):
    np.testing.assert_array_equal(compute(ol.map(dbl, ol.scanl1(add, X))), 2 * np.cumsum(X))
    np.testing.assert_array_equal(
        compute(ol.scanl1(add, ol.map(dbl, X))), np.cumsum(2 * X, dtype=np.float32)
    )
    assert compute(ol.fold_all(add, 0.0, ol.scanl1(add, X)))[()] == np.cumsum(X).sum()


@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p])
def test_scanl_total_parts_of_different_shapes(compute):
    scan, total = ol.scanl_total(add, 0.0, X)
    np.testing.assert_array_equal(compute(scan), np.concatenate([[0], np.cumsum(X)[:-1]]))
    assert compute(total)[()] == X.sum()


@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p])
def test_permute_and_filter_feed_element_consumers(compute):
    hist = ol.permute(add, np.zeros(3, np.int64), mod3, np.ones(10, np.int64))
    np.testing.assert_array_equal(compute(ol.map(dbl, hist)), 2 * np.bincount(np.arange(10) % 3))
    kept = ol.filter(big, X)
    np.testing.assert_array_equal(compute(ol.map(dbl, kept)), 2 * X[X > 4])


def test_a_shared_scan_is_computed_once():
    scan = ol.scanl1(add, X)
    calls = []
    real = type(scan).materialise

    def counting(self, ctx, sources):
        calls.append(1)
        return real(self, ctx, sources)

    type(scan).materialise = counting  # type: ignore[method-assign]
    try:
        got = ol.compute_s(ol.zip_with(add, scan, scan))
    finally:
        type(scan).materialise = real  # type: ignore[method-assign]
    np.testing.assert_array_equal(got, 2 * np.cumsum(X))
    assert len(calls) == 1
