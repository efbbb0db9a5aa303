"""Streamed scans (offload.stream.scans) under numba's simulator: ``compute_g`` of the scans
over host inputs larger than a small ``device_memory_limit`` runs in chunks and gives the
unstreamed ``compute_g``'s bits whatever the chunking -- a vector's through the
unstreamed reduce-then-scan tree reproduced in two passes, a matrix's row by row."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import offload as ol
import offload.stream as stream
from offload.acc.scan_job import GPU_CHUNK
from offload.acc.skeletons.build import SIM_THREADS
from offload.stream import scans
from tests.stream.collective_helpers import bits, sim_or_gpu  # noqa: F401 (fixture)

sim = pytest.mark.sim
gpu = pytest.mark.gpu

RNG = np.random.default_rng(23)
F32 = RNG.standard_normal(1500).astype(np.float32)
F64 = RNG.standard_normal(700)
I32 = RNG.integers(-(2**30), 2**30, 700).astype(np.int32)  # (their int32 sums wrap)
M = RNG.standard_normal((13, 70)).astype(np.float32)


TILE = SIM_THREADS * GPU_CHUNK
"""Elements of the simulator's one-pass scan tile."""
LONG32 = RNG.standard_normal(2 * TILE + 600).astype(np.float32)
LONG64 = RNG.standard_normal(2 * TILE + 600)
LONGI = RNG.integers(-(2**30), 2**30, 2 * TILE + 600).astype(np.int32)


@pytest.fixture
def tree_mode(monkeypatch):
    """Float scans on the chunk tree (``cross_target``; the default mode's one pass has
    chunks of whole tiles: the tests below it)."""
    monkeypatch.setattr(ol.config, "determinism", "cross_target")


def add(a, b):
    return a + b


def affine(a, b):
    """The composition of x -> a0 x + a1, then b: associative, not commutative."""
    return a[0] * b[0], a[1] * b[0] + b[1]


def scaled(v):
    return v * np.float32(1.5) - np.float32(0.25)


def _kinds(f, z, x):
    return {
        "scanl": lambda: ol.scanl(f, z, x),
        "scanl1": lambda: ol.scanl1(f, x),
        "scanr": lambda: ol.scanr(f, z, x),
        "scanr1": lambda: ol.scanr1(f, x),
        "scanl_total-scan": lambda: ol.scanl_total(f, z, x)[0],
        "scanl_total-total": lambda: ol.scanl_total(f, z, x)[1],
        "scanr_total-scan": lambda: ol.scanr_total(f, z, x)[0],
        "scanr_total-total": lambda: ol.scanr_total(f, z, x)[1],
    }


KINDS = list(_kinds(add, 0, F32))


def _make(kind, f, z, x):
    return _kinds(f, z, x)[kind]()


@sim
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("x", "z"),
    [(F32[:300], np.float32(0.5)), (F64[:300], 0.25)],  # (integers: the one pass, below)
    ids=["float32", "float64"],
)
@pytest.mark.usefixtures("tree_mode")
def test_a_streamed_vector_scan_has_the_unstreamedbits(kind, x, z):
    tree = _make(kind, add, z, ol.map(lambda v: v + v, x))
    want = bits(ol.compute_g(tree))
    for rows in (GPU_CHUNK, 3 * GPU_CHUNK, 200):  # (200 rows: an uneven last chunk)
        assert len(stream.plan(tree, rows=rows).chunks) >= 2
        assert bits(stream.compute_g(tree, rows=rows)) == want


@sim
@pytest.mark.parametrize("kind", ["scanl", "scanr1", "scanr_total-scan"])
@pytest.mark.usefixtures("tree_mode")
def test_a_long_vector_scan_keeps_the_bits_of_its_deeper_tree(kind):
    """1500 elements: 47 tree chunks, whose totals' carries are a tree of two levels."""
    tree = _make(kind, add, np.float32(0.0), ol.map(scaled, F32))
    want = bits(ol.compute_g(tree))
    for rows in (GPU_CHUNK, 10 * GPU_CHUNK + 5):
        assert bits(stream.compute_g(tree, rows=rows)) == want


@sim
@pytest.mark.usefixtures("tree_mode")
def test_the_bits_check_tells_a_running_carry_apart():
    """A sequential float32 running sum (a carry passed from element to element) has
    other bits than the unstreamed tree: the equalities above are no coincidence."""
    tree = ol.scanl1(add, ol.map(scaled, F32))
    got = stream.compute_g(tree, rows=4 * GPU_CHUNK)
    running = np.cumsum(scaled(F32), dtype=np.float32)
    assert got.tobytes() == np.asarray(ol.compute_g(tree)).tobytes()
    assert got.tobytes() != running.tobytes()
    np.testing.assert_allclose(got, running, rtol=1e-4, atol=1e-3)


@sim
def test_an_int32_scan_wraps_as_numpy_and_compute_s():
    tree = ol.scanl1(add, I32)
    got = stream.compute_g(tree, rows=2 * GPU_CHUNK)
    assert got.tobytes() == np.cumsum(I32, dtype=np.int32).tobytes()
    assert got.tobytes() == np.asarray(ol.compute_s(tree)).tobytes()


@sim
@pytest.mark.parametrize("kind", ["scanl", "scanr1", "scanr"])
@pytest.mark.usefixtures("tree_mode")
def test_a_scan_that_does_not_commute_keeps_its_order(kind):
    a, b = F64[:200] * 0.1 + 1.0, F64[200:400]
    tree = _make(kind, affine, (1.0, 0.0), (a, b))
    want = bits(ol.compute_g(tree))
    got = stream.compute_g(tree, rows=2 * GPU_CHUNK)
    assert isinstance(got, tuple) and bits(got) == want


@sim
@pytest.mark.parametrize("kind", ["scanl", "scanr1", "scanr_total-total"])
def test_a_scan_of_rows_streams_chunks_of_rows(kind):
    tree = _make(kind, add, np.float32(1.0), ol.map(scaled, M))
    want = bits(ol.compute_g(tree))
    for rows in (1, 4):
        assert len(stream.plan(tree, rows=rows).chunks) >= 4
        assert bits(stream.compute_g(tree, rows=rows)) == want


@sim
def test_a_segmented_scan_of_rows_streams():
    seg = np.array([20, 0, 45, 5])
    tree = ol.scanl_seg(add, np.float32(0.0), M, seg)
    assert bits(stream.compute_g(tree, rows=3)) == bits(ol.compute_g(tree))


@sim
@pytest.mark.usefixtures("tree_mode")
def test_compute_g_over_the_limit_streams_a_scan(monkeypatch):
    calls = []
    real = scans.run
    monkeypatch.setattr(scans, "run", lambda ss, *a: calls.append(ss) or real(ss, *a))
    tree = ol.scanr(add, np.float32(0.0), ol.map(scaled, F32[:600]))
    want = bits(ol.compute_g(tree))
    ol.config.device_memory_limit = 4000
    assert len(stream.plan(tree).chunks) >= 3
    assert bits(ol.compute_g(tree)) == want
    assert len(calls) == 1
    ol.config.device_memory_limit = 1 << 20
    assert bits(ol.compute_g(tree)) == want and len(calls) == 1  # (within it: unstreamed)


@sim
@pytest.mark.usefixtures("tree_mode")
def test_a_streamed_scan_takes_dtype():
    tree = ol.scanl1(add, F32[:300])
    want = bits(ol.compute_g(tree, dtype=np.float64))
    ol.config.device_memory_limit = 2000
    assert len(stream.plan(tree).chunks) >= 2
    assert bits(ol.compute_g(tree, dtype=np.float64)) == want


@sim
@pytest.mark.usefixtures("tree_mode")
def test_the_chunks_of_a_vector_scan_start_at_its_tree_chunks():
    for tree, has_z, right in [
        (ol.scanl(add, 0.0, F64[:500]), 1, False),
        (ol.scanr(add, 0.0, F64[:500]), 1, True),
        (ol.scanl1(add, F64[:500]), 0, False),
    ]:
        plan = stream.plan(tree, rows=2 * GPU_CHUNK)
        for chunk in plan.chunks:
            (lo, hi), *_ = chunk.block
            edge = 500 - hi if right else lo  # (the widened side: one tree chunk)
            assert edge == 0 or (edge + has_z) % GPU_CHUNK == 0


@sim
@pytest.mark.usefixtures("tree_mode")
def test_a_segmented_inclusive_scan_of_a_vector_streams_its_head_flags_along():
    seg = np.array([0, 100, 1, 0, 250, 3, 346])  # (empty and one-element segments)
    tree = ol.scanl1_seg(add, ol.map(lambda v: v * 0.5, F64), seg)
    want = bits(ol.compute_g(tree))
    for rows in (GPU_CHUNK, 96, 250):
        assert bits(stream.compute_g(tree, rows=rows)) == want


@sim
@pytest.mark.usefixtures("tree_mode")
def test_a_segmented_exclusive_scan_of_a_vector_streams_its_virtual_sequence():
    """``z`` before each segment: the host-made sequence of the unstreamed GPU scan."""
    seg = np.array([0, 100, 1, 0, 250, 3, 346])  # (empty and one-element segments)
    tree = ol.scanl_seg(add, 0.5, ol.map(lambda v: v * 0.5, F64), seg)
    want = bits(ol.compute_g(tree))
    for rows in (GPU_CHUNK, 96, 250):
        assert len(stream.plan(tree, rows=rows).chunks) >= 3
        assert bits(stream.compute_g(tree, rows=rows)) == want
    ol.config.device_memory_limit = 6000  # (F64: 5600 bytes, the result 5656)
    assert bits(ol.compute_g(tree)) == want


@sim
def test_a_segmented_exclusive_scan_of_a_vector_in_one_pass_and_of_tuples():
    seg = np.array([0, 1000, 1, 0, TILE + 300, 3, LONG64.size - TILE - 1304])
    for tree in (
        ol.scanl_seg(lambda a, b: a * 0.5 - b, 0.0, LONG32, seg),
        ol.scanl_seg(affine, (1.0, 0.0), (LONG64 * 0.1 + 1.0, LONG64[::-1] * 1.0), seg),
    ):
        want = bits(ol.compute_g(tree))
        assert bits(stream.compute_g(tree, rows=TILE)) == want


@sim
@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n=st.integers(1, 260),
    rows=st.integers(1, 200),
    kind=st.sampled_from(KINDS),
    dtype=st.sampled_from([np.int64, np.float32, np.float64]),
    seed=st.integers(0, 2**16),
)
@pytest.mark.usefixtures("tree_mode")
def test_any_chunking_of_any_scan_has_the_unstreamedbits(n, rows, kind, dtype, seed):
    x = np.random.default_rng(seed).standard_normal(n) * 100
    x = x.astype(dtype)
    tree = _make(kind, add, dtype(3), x)
    assert bits(stream.compute_g(tree, rows=rows)) == bits(ol.compute_g(tree))


# The default mode's one pass: chunks of whole tiles, scanned in the virtual sequence's
# order, each continued from the previous chunk's last prefix.


def _tile_edges(tree, n, has_z, right, rows):
    plan = stream.plan(tree, rows=rows)
    for chunk in plan.chunks:
        (lo, hi), *_ = chunk.block
        edge = n - hi if right else lo
        assert edge == 0 or (edge + has_z) % TILE == 0
    return plan


@sim
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("x", [LONG32, LONGI], ids=["float32", "int32"])
def test_a_streamed_vector_scan_in_one_pass_has_the_unstreamed_bits(kind, x):
    tree = _make(kind, add, x.dtype.type(3), ol.map(lambda v: v + v, x))
    want = bits(ol.compute_g(tree))
    assert scans.recognise(tree).tile() == TILE
    has_z = int(kind.split("-")[0] in ("scanl", "scanr", "scanl_total", "scanr_total"))
    plan = _tile_edges(tree, x.size, has_z, kind.startswith("scanr"), TILE)
    assert len(plan.chunks) >= 2
    assert bits(stream.compute_g(tree, rows=TILE)) == want


@sim
def test_one_pass_streaming_is_no_running_carry_nor_the_tree():
    tree = ol.scanl1(add, ol.map(scaled, LONG32))
    got = stream.compute_g(tree, rows=TILE)
    assert got.tobytes() == np.asarray(ol.compute_g(tree)).tobytes()
    assert got.tobytes() != np.cumsum(scaled(LONG32), dtype=np.float32).tobytes()
    ol.config.determinism = "cross_target"
    try:
        assert got.tobytes() != np.asarray(ol.compute_g(tree)).tobytes()
    finally:
        ol.config.determinism = "deterministic"


@sim
def test_one_pass_streaming_of_tuples_and_segments():
    a, b = LONG64 * 0.1 + 1.0, LONG64[::-1] * 1.0
    for kind in ("scanl", "scanr1"):
        tree = _make(kind, affine, (1.0, 0.0), (a, b))
        got = stream.compute_g(tree, rows=TILE)
        assert isinstance(got, tuple) and bits(got) == bits(ol.compute_g(tree))
    seg = np.array([0, 1000, 1, 0, TILE + 300, 3, a.size - TILE - 1304])
    tree = ol.scanl1_seg(add, ol.map(lambda v: v * 0.5, LONG64), seg)
    assert bits(stream.compute_g(tree, rows=TILE)) == bits(ol.compute_g(tree))


# On a real GPU (the ``gpu`` lane): the two passes through the pipeline's streams.

BIG = RNG.standard_normal(1 << 21).astype(np.float32)


@gpu
@pytest.mark.parametrize("kind", ["scanl1", "scanr", "scanl_total-total"])
def test_a_streamed_scan_on_the_gpu_has_the_unstreamedbits(kind):
    tree = _make(kind, add, np.float32(0.0), ol.map(scaled, BIG))
    try:
        want = bits(ol.compute_g(tree))
        ol.config.device_memory_limit = 4 << 20
        assert len(stream.plan(tree).chunks) >= 4
        assert bits(ol.compute_g(tree)) == want
    finally:
        stream.release()


@gpu
@pytest.mark.parametrize("mode", ["deterministic", "cross_target"])
def test_a_streamed_segmented_exclusive_scan_on_the_gpu_has_the_unstreamed_bits(mode):
    seg = np.array([0, 5, 1 << 19, 0, 3, (1 << 21) - (1 << 19) - 8])
    tree = ol.scanl_seg(add, np.float32(0.25), ol.map(scaled, BIG), seg)
    ol.config.determinism = mode
    try:
        want = bits(ol.compute_g(tree))
        ol.config.device_memory_limit = 4 << 20
        assert len(stream.plan(tree).chunks) >= 4
        assert bits(ol.compute_g(tree)) == want
    finally:
        ol.config.determinism = "deterministic"
        stream.release()
