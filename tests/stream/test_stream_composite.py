"""Trees of several streamed parts (offload.stream.composite) under numba's simulator:
work after a collective, a collective over another, shared work -- each part computed
into host arrays, streamed where it exceeds the budget, with the unstreamed call's bits."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
import offload.stream as stream
from offload.stream import StreamUnsupported
from tests.stream.collective_helpers import bits, sim_or_gpu  # noqa: F401 (fixture)

sim = pytest.mark.sim

RNG = np.random.default_rng(37)
X = RNG.standard_normal((120, 50))
V = RNG.standard_normal(12000).astype(np.float32)
LIMIT = 30000  # bytes: X is 48000, V 48000


def add(a, b):
    return a + b


def bigger(a, b):
    return a if a > b else b


def to_row(i, j, k, m):
    return (i,)


def lap(get):
    return get(-1, 0) + get(1, 0) - get(0, 1) * 0.5


def _shared():
    m = ol.map(lambda v: v * 2.0 - 1.0, X)  # read by two folds: computed once
    return ol.zip_with(add, ol.fold(add, 0.0, m), ol.fold(bigger, -1e300, m))


TREES = {
    "map-after-fold": lambda: ol.map(lambda v: v * 0.5 + 1.0, ol.fold(add, 0.0, X)),
    "map-after-fold_all": lambda: ol.map(lambda v: v / 3.0, ol.fold_all(add, 0.0, V)),
    "fold-of-scan": lambda: ol.fold(add, 0.0, ol.scanl1(add, X)),
    "scan-of-scan-vector": lambda: ol.scanl1(add, ol.scanl1(add, V)),
    "stencil-of-stencil": lambda: ol.stencil(lap, ol.stencil(lap, X, "wrap"), "mirror"),
    "stencil-of-scan": lambda: ol.stencil(lap, ol.scanl1(add, X), "clamp"),
    "shared-source": _shared,
    "total-and-scan": lambda: ol.zip_with(
        add, ol.scanl_total(add, 0.0, X)[1], ol.fold(add, 1.0, X)
    ),
}


@sim
@pytest.mark.parametrize("make", TREES.values(), ids=TREES.keys())
def test_a_tree_of_streamed_parts_has_the_unstreamed_bits(make, streamed):
    tree = make()
    want = bits(ol.compute_g(tree))
    ol.config.device_memory_limit = LIMIT
    got = ol.compute_g(tree)
    assert isinstance(got, np.ndarray)
    assert bits(got) == want
    assert streamed  # (a part was streamed, not all computed whole)
    ol.config.device_memory_limit = None
    assert bits(stream.compute_g(tree, rows=30)) == want


@sim
def test_a_cast_applies_to_the_root():
    tree = TREES["map-after-fold"]()
    want = bits(ol.compute_g(tree, dtype=np.float32))
    ol.config.device_memory_limit = LIMIT
    assert bits(ol.compute_g(tree, dtype=np.float32)) == want


@sim
def test_a_permute_of_rank_4_over_a_scan_streams_part_by_part(streamed):
    source = ol.scanl1(add, V.reshape(1000, 3, 2, 2))  # (streamed: a scan of rows)
    tree = ol.map(lambda v: v + 1.0, ol.permute(add, np.zeros(1000, np.float32), to_row, source))
    want = bits(ol.compute_g(tree))
    ol.config.device_memory_limit = LIMIT
    assert bits(ol.compute_g(tree)) == want
    assert streamed == ["StreamedScan", "StreamedPermute"]


def one():
    return 1


@sim
def test_a_part_streaming_does_not_cover_is_named_with_its_size():
    tree = ol.map(lambda v: v + 1.0, ol.permute(add, np.zeros(10000), one, np.array(2.0)))
    ol.config.device_memory_limit = LIMIT
    with pytest.raises(StreamUnsupported, match=r"source is 0-d, .*\(\d+ bytes\) exceed"):
        ol.compute_g(tree)


def _both_items():
    excl, total = ol.scanl_total(add, 0.0, X)
    return ol.zip_with(add, ol.fold(add, 0.0, excl), total)


@sim
def test_a_tree_reading_both_items_of_a_total_scan_streams_it_once(streamed):
    tree = _both_items()
    want = bits(ol.compute_g(tree))
    ol.config.device_memory_limit = LIMIT
    assert bits(ol.compute_g(tree)) == want
    assert streamed.count("StreamedScan") == 1


@sim
def test_a_part_within_the_budget_runs_unstreamed(streamed):
    """The scan and the fold of its rows are streamed; the fold_all of the 120 row sums
    fits and runs unstreamed."""
    tree = ol.fold_all(add, 0.0, ol.fold(add, 0.0, ol.scanl1(add, X)))
    want = bits(ol.compute_g(tree))
    ol.config.device_memory_limit = LIMIT
    assert bits(ol.compute_g(tree)) == want
    assert streamed == ["StreamedScan", "StreamedFold"]


@pytest.mark.gpu
def test_a_tree_of_streamed_parts_on_the_gpu_has_the_unstreamed_bits():
    x = RNG.standard_normal((4000, 300)).astype(np.float32)
    tree = ol.map(lambda s: s * 0.5, ol.fold(add, 0.0, ol.stencil(lap, x, "wrap")))
    want = bits(ol.compute_g(tree))
    ol.config.device_memory_limit = 1 << 20  # (x: 4.8 MB)
    assert bits(ol.compute_g(tree)) == want
