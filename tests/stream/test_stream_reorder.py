"""Streamed permutes, scatters and filters (offload.stream.reorder) under numba's
simulator: the source streamed in chunks, in source order, into the device-resident
result (a permute) or filtered chunk by chunk (a filter), with the unstreamed
``compute_g``'s bits whatever the chunking."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import offload as ol
import offload.stream as stream
from offload.acc.permute import IGNORE, PermuteIndexError
from offload.ptx.simarray import SimDeviceArray
from offload.stream import reorder
from tests.stream.collective_helpers import bits, sim_or_gpu  # noqa: F401 (fixture)

sim = pytest.mark.sim
gpu = pytest.mark.gpu

RNG = np.random.default_rng(29)
V64 = RNG.standard_normal(400) * 1e3
V32 = V64.astype(np.float32)
I64 = RNG.integers(-(2**40), 2**40, 400)
TO = RNG.integers(0, 12, 400)
M = RNG.standard_normal((40, 6))
R5 = RNG.standard_normal((20, 2, 1, 3, 2))


def add(a, b):
    return a + b


def dest(i):
    return (i * 5) % 12


def dest_or_drop(i):
    return IGNORE if i % 7 == 3 else (i * 5) % 12


def mirrored(t):
    return 11 - t


def dest4(i, j, k, m):
    return (i * 5 + j * 3 + k + m) % 12


def dest5(i, j, k, m, q):
    return (i + 7 * j + 3 * k + m + q) % 12


def first_wins(new, old):
    """Not commutative: where two sources meet, the order shows."""
    return old if old != 0 else new


def _streamed_equals_unstreamed(tree, n):
    """Over chunkings of ``n`` source rows with uneven last chunks."""
    want = bits(ol.compute_g(tree))
    for rows in (n // 7 + 1, n // 3, n // 2 + 1):
        assert len(stream.plan(tree, rows=rows).chunks) >= 2
        assert bits(stream.compute_g(tree, rows=rows)) == want
    return want


PERMUTES = {
    "float64-sum": lambda: ol.permute(add, np.zeros(12), dest, ol.map(lambda v: v * 1.5, V64)),
    "float32-sum-ignore": lambda: ol.permute(add, np.ones(12, np.float32), dest_or_drop, V32),
    "int64-sum": lambda: ol.permute(add, np.zeros(12, np.int64), dest, I64),
    "first-wins": lambda: ol.permute(first_wins, np.zeros(12), dest, V64),
    "scatter": lambda: ol.scatter(TO, np.full(12, -1.0), V64),
    "rows-to-transpose": lambda: ol.permute(add, np.zeros((6, 40)), lambda i, j: (j, i), M),
    "rank-4": lambda: ol.permute(add, np.zeros(12), dest4, M.reshape(40, 2, 3, 1)),
    "rank-5-first-wins": lambda: ol.permute(first_wins, np.zeros(12), dest5, R5),
    "scatter-device-indices": lambda: ol.scatter(SimDeviceArray(TO), np.full(12, -1.0), V64),
    "scatter-delayed-indices": lambda: ol.scatter(ol.map(mirrored, TO), np.full(12, -1.0), V64),
}


@sim
@pytest.mark.parametrize("make", PERMUTES.values(), ids=PERMUTES.keys())
def test_a_streamed_permute_has_the_unstreamedbits(make):
    tree = make()
    _streamed_equals_unstreamed(tree, tree.a.shape[0])


@sim
def test_the_float_sum_check_tells_orders_apart():
    """Another order (the chunks' sums, then their sum) has other bits."""
    tree = PERMUTES["float64-sum"]()
    got = stream.compute_g(tree, rows=50)
    x = V64 * 1.5
    other = np.zeros(12)
    for lo in range(0, 400, 50):
        part = np.zeros(12)
        for i in range(lo, lo + 50):
            part[dest(i)] += x[i]
        other += part
    assert got.tobytes() == np.asarray(ol.compute_g(tree)).tobytes()
    assert got.tobytes() != other.tobytes()


@sim
def test_a_streamed_int_sum_and_scatter_equal_numpy():
    got = stream.compute_g(PERMUTES["int64-sum"](), rows=30)
    want = np.zeros(12, np.int64)
    np.add.at(want, (np.arange(400) * 5) % 12, I64)
    assert got.tobytes() == want.tobytes()
    scattered = stream.compute_g(PERMUTES["scatter"](), rows=30)
    want = np.full(12, -1.0)
    want[TO] = V64  # (NumPy: the last write to a place wins, as scatter's)
    assert scattered.tobytes() == want.tobytes()


@sim
def test_compute_g_over_the_limit_streams_a_permute(monkeypatch):
    calls = []
    real = reorder.run
    monkeypatch.setattr(reorder, "run", lambda st_, *a: calls.append(st_) or real(st_, *a))
    tree = PERMUTES["float64-sum"]()
    want = bits(ol.compute_g(tree))
    ol.config.device_memory_limit = 1600
    assert len(stream.plan(tree).chunks) >= 3
    assert bits(ol.compute_g(tree)) == want and len(calls) == 1


@sim
def test_a_streamed_permute_names_a_destination_outside_the_result():
    tree = ol.permute(add, np.zeros(12), lambda i: 12 if i == 130 else i % 12, V64)
    with pytest.raises(PermuteIndexError) as err:
        stream.compute_g(tree, rows=50)  # (element 130: the 31st of chunk [100, 150))
    text = str(err.value)
    assert "sends source element (30,) to (12,)" in text and "add 100" in text


FILTERS = {
    "float64": lambda: ol.filter(lambda v: v > 100.0, ol.map(lambda v: v * 0.5, V64)),
    "float32": lambda: ol.filter(lambda v: v < 0, V32),
    "int64": lambda: ol.filter(lambda v: v % 3 == 0, I64),
    "tuples": lambda: ol.filter(lambda t: t[0] > t[1], (V64, V64[::-1].copy())),
}


@sim
@pytest.mark.parametrize("make", FILTERS.values(), ids=FILTERS.keys())
def test_a_streamed_filter_keeps_the_order_andbits(make):
    _streamed_equals_unstreamed(make(), 400)


@sim
def test_a_streamed_filter_equals_numpy():
    got = stream.compute_g(FILTERS["float32"](), rows=64)
    assert got.tobytes() == V32[V32 < 0].tobytes()


@sim
def test_compute_g_over_the_limit_streams_a_filter():
    tree = FILTERS["float64"]()
    want = bits(ol.compute_g(tree))
    ol.config.device_memory_limit = 3000
    assert len(stream.plan(tree).chunks) >= 3
    assert bits(ol.compute_g(tree)) == want


@sim
def test_a_permute_whose_defaults_hold_a_collective_streams_part_by_part():
    tree = ol.permute(add, ol.scanl1(add, np.ones(12)), dest, V64)
    with pytest.raises(stream.StreamUnsupported, match="defaults hold a collective"):
        stream.plan(tree)  # (not one streamed part: the scan, then the permute)
    want = bits(ol.compute_g(tree))
    ol.config.device_memory_limit = 500
    assert bits(ol.compute_g(tree)) == want


@sim
@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n=st.integers(1, 300),
    rows=st.integers(1, 120),
    dests=st.integers(1, 20),
    dtype=st.sampled_from([np.int32, np.float32, np.float64]),
    seed=st.integers(0, 2**16),
)
def test_any_chunking_of_a_permute_and_a_filter_has_the_unstreamedbits(n, rows, dests, dtype, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 100).astype(dtype)
    to = rng.integers(0, dests, n)
    tree = ol.permute(add, np.zeros(dests, dtype), lambda i: to[i], x)
    assert bits(stream.compute_g(tree, rows=rows)) == bits(ol.compute_g(tree))
    kept = ol.filter(lambda v: v > 0, x)
    assert bits(stream.compute_g(kept, rows=rows)) == bits(ol.compute_g(kept))


# On a real GPU (the ``gpu`` lane): each chunk's permute on its stream after the previous.

BIG = RNG.standard_normal(1 << 21)
BINS = RNG.integers(0, 4096, 1 << 21)
BINS16 = BINS.astype(np.int16)
"""The index function's bins: its captures are on the device whole (resident), so they are
4 MiB here, well inside the 8 MiB budget (BINS, 16 MiB, would not fit)."""


def _on_device(x):
    import cupy as cp

    return cp.asarray(x)


@gpu
@pytest.mark.parametrize(
    "make",
    [
        lambda: ol.permute(add, np.zeros(4096), lambda i: BINS16[i], ol.map(lambda v: v * 2, BIG)),
        lambda: ol.scatter(BINS, np.zeros(4096), BIG),
        lambda: ol.filter(lambda v: v > 0.5, BIG),
        lambda: ol.scatter(_on_device(BINS), np.zeros(4096), BIG),
    ],
    ids=["float-sum", "scatter", "filter", "scatter-device-indices"],
)
def test_a_streamed_permute_or_filter_on_the_gpu_has_the_unstreamedbits(make):
    tree = make()
    try:
        want = bits(ol.compute_g(tree))
        ol.config.device_memory_limit = 8 << 20
        assert len(stream.plan(tree).chunks) >= 4
        assert bits(ol.compute_g(tree)) == want
    finally:
        stream.release()
