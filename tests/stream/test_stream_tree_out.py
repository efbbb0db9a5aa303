"""``out=`` of streamed trees holding collectives (offload.stream.tree_out) under numba's
simulator: the result written into host NumPy arrays with the unstreamed call's bits,
``out=`` checked before any chunk runs, NumPy's meaning kept where it is an input."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
import offload.stream as stream
from tests.stream.collective_helpers import bits, sim_or_gpu  # noqa: F401 (fixture)

sim = pytest.mark.sim

RNG = np.random.default_rng(41)
X = RNG.standard_normal((120, 50))
LIMIT = 30000  # bytes: X is 48000


def add(a, b):
    return a + b


def lap(get):
    return get(-1, 0) + get(1, 0) - get(0, 1) * 0.5


def positive(v):
    return v > 0.0


TREES = {
    "fold": lambda: ol.fold(add, 0.0, ol.map(lambda v: v * 2.0, X)),
    "fold_all": lambda: ol.fold_all(add, 0.0, X),
    "stencil": lambda: ol.stencil(lap, X, "wrap"),
    "map-after-fold": lambda: ol.map(lambda v: v * 0.5 + 1.0, ol.fold(add, 0.0, X)),
}


@sim
@pytest.mark.parametrize("make", TREES.values(), ids=TREES.keys())
def test_a_streamed_tree_writes_into_out_with_the_unstreamed_bits(make, streamed):
    tree = make()
    want = ol.compute_g(tree)
    out = np.full(want.shape, np.nan, want.dtype)
    ol.config.device_memory_limit = LIMIT
    got = ol.compute_g(tree, out=out)
    assert got is out
    assert bits(out) == bits(want)
    assert streamed  # (streamed, not computed whole)
    ol.config.device_memory_limit = None
    again = np.full(want.shape, np.nan, want.dtype)
    assert stream.compute_g(tree, rows=30, out=again) is again
    assert bits(again) == bits(want)


@sim
def test_a_filter_writes_the_length_it_finds():
    tree = ol.filter(positive, X.reshape(-1))
    want = ol.compute_g(tree)
    ol.config.device_memory_limit = LIMIT
    out = np.empty(want.shape, want.dtype)
    assert ol.compute_g(tree, out=out) is out
    assert bits(out) == bits(want)
    with pytest.raises(ValueError, match=r"out= has shape \(5,\), the result"):
        ol.compute_g(tree, out=np.empty(5, want.dtype))


@sim
def test_out_takes_the_cast_of_dtype_and_same_kind():
    tree = TREES["fold"]()
    want = ol.compute_g(tree, dtype=np.float32)
    ol.config.device_memory_limit = LIMIT
    out = np.empty(want.shape, np.float64)  # float32 -> float64: same_kind
    ol.compute_g(tree, dtype=np.float32, out=out)
    np.testing.assert_array_equal(out, want.astype(np.float64))


@sim
def test_a_tuple_result_writes_each_array():
    tree = ol.zip_with(lambda a, b: (a, b * 2.0), ol.fold(add, 0.0, X), ol.fold(add, 1.0, X))
    want = ol.compute_g(tree)
    outs = tuple(np.empty(w.shape, w.dtype) for w in want)
    ol.config.device_memory_limit = LIMIT
    assert ol.compute_g(tree, out=outs) is outs
    assert bits(outs) == bits(want)


@sim
@pytest.mark.parametrize(
    ("out", "error", "match"),
    [
        (np.empty(119), ValueError, r"out= has shape \(119,\), the result \(120,\)"),
        (np.empty(120, np.int32), TypeError, r"same_kind"),
        ((np.empty(120), np.empty(120)), ValueError, r"out= has 2 array\(s\)"),
    ],
    ids=["shape", "dtype", "count"],
)
def test_a_wrong_out_is_refused_before_any_chunk_runs(out, error, match, streamed):
    ol.config.device_memory_limit = LIMIT
    with pytest.raises(error, match=match):
        ol.compute_g(TREES["fold"](), out=out)
    assert not streamed


@sim
def test_a_read_only_out_is_refused_before_any_chunk_runs(streamed):
    out = np.empty(120)
    out.setflags(write=False)
    ol.config.device_memory_limit = LIMIT
    with pytest.raises(ValueError, match="out= is read-only"):
        ol.compute_g(TREES["fold"](), out=out)
    with pytest.raises(ValueError, match="out= is read-only"):
        stream.compute_g(TREES["fold"](), out=out)
    assert not streamed


@sim
def test_out_that_is_the_input_gets_the_result_of_the_input_as_it_was():
    x = X.copy()
    tree = ol.stencil(lap, x, "wrap")
    want = ol.compute_g(tree)
    ol.config.device_memory_limit = LIMIT
    assert ol.compute_g(tree, out=x) is x
    assert bits(x) == bits(want)
