"""Streamed stencils (offload.stream.stencils) under numba's simulator, and on the GPU in
the gpu lane: the leading axis cut into chunks, each chunk's kernel reading its rows and
their halo, with the unstreamed ``compute_g``'s bits for every boundary, rank and
chunking (a wrap's rows that read across the ends computed apart)."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
import offload.stream as stream
from offload.stream import StreamUnsupported
from tests.stream.collective_helpers import bits, sim_or_gpu  # noqa: F401 (fixture)

sim = pytest.mark.sim
gpu = pytest.mark.gpu

RNG = np.random.default_rng(31)
X1 = RNG.standard_normal(97).astype(np.float32)
X2 = RNG.standard_normal((41, 13))
Y2 = RNG.standard_normal((41, 13))
X3 = RNG.standard_normal((19, 5, 4)).astype(np.float32)
I2 = RNG.integers(-1000, 1000, (41, 13))

BOUNDARIES = {
    "clamp": "clamp",
    "mirror": "mirror",
    "wrap": "wrap",
    "constant": ol.constant(2.5),
}


def five_point(get):
    return get(-1, 0) * 0.25 + get(2, 0) - get(0, 1) * get(0, -1) + get(0, 0)


def lopsided1(get):
    return get(-3) - 2.0 * get(1) + get(0)


def box3(get):
    return get(-1, 0, 0) + get(1, 1, -1) * get(0, -1, 1)


def ints(get):
    return get(-2, 1) * 3 - get(1, -1) + get(0, 0) // 7


def pair(get):  # a tuple-valued source: get returns its components
    a, b = get(1, 0)
    c, d = get(-1, -1)
    return a * d - b + c


SOURCES = {
    "vector": lambda: (lopsided1, X1),
    "host-array": lambda: (five_point, X2),
    "map": lambda: (five_point, ol.map(lambda v: v * 1.5 - 0.25, X2)),
    "zip_with": lambda: (five_point, ol.zip_with(lambda a, b: a / (1.0 + b * b), X2, Y2)),
    "rank-3": lambda: (box3, X3),
    "integers": lambda: (ints, I2),
    "tuple": lambda: (pair, (X2, Y2)),
}


def _streamed_equals_unstreamed(node):
    """Over chunkings of the rows down to two a chunk (fewer rows than the halo; one row
    a chunk: ``test_fewer_rows_than_the_offsets_reach``)."""
    want = bits(ol.compute_g(node))
    n = node.shape[0]
    for rows in (2, n // 3 + 1):
        assert len(stream.plan(node, rows=rows).chunks) >= 2
        assert bits(stream.compute_g(node, rows=rows)) == want
    return want


@sim
@pytest.mark.parametrize("boundary", BOUNDARIES.values(), ids=BOUNDARIES.keys())
@pytest.mark.parametrize("make", SOURCES.values(), ids=SOURCES.keys())
def test_a_streamed_stencil_has_the_unstreamed_bits(make, boundary):
    fn, source = make()
    if isinstance(source, tuple) and not isinstance(boundary, str):
        boundary = ol.constant((2.5, -1.0))  # (a tuple-valued source's boundary value)
    node = ol.stencil(fn, source, boundary)
    want = _streamed_equals_unstreamed(node)
    assert want == bits(ol.compute_s(node))


@sim
@pytest.mark.parametrize("boundary", ["clamp", "mirror", "wrap", ol.constant(0.0)])
def test_each_chunk_reads_its_rows_and_their_halo_only(boundary):
    """The windows the range analysis finds: a chunk's rows widened by the offsets along
    the leading axis (-1 and +2), cut at the array's ends (a wrap's chunks clamp), and
    under a mirror the rows the last ones reflect to (row 41 is row 39, 42 is 38)."""
    node = ol.stencil(five_point, X2, boundary)
    for chunk in stream.plan(node, rows=8).chunks:
        (lo, hi), _ = chunk.block
        (window,) = chunk.windows.values()
        start = max(lo - 1, 0)
        if boundary == "mirror" and hi + 1 > 40:
            start = min(start, 80 - (hi + 1))
        assert window == ((start, min(hi + 2, 41)), (0, 13))


@sim
def test_the_rows_a_wrap_reads_across_the_ends_are_the_wrapped_ones():
    """Against NumPy: a periodic 3-point sum along the rows, streamed one row a chunk."""
    node = ol.stencil(lambda get: get(-1, 0) + get(1, 0) + get(0, 0), X2, "wrap")
    want = np.roll(X2, 1, axis=0) + np.roll(X2, -1, axis=0) + X2
    got = stream.compute_g(node, rows=1)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@sim
def test_fewer_rows_than_the_offsets_reach():
    """Three rows read at offsets up to 4 away (every read reflected or wrapped more
    than once)."""
    x = RNG.standard_normal((3, 7))
    for boundary in ("clamp", "mirror", "wrap", ol.constant(-1.0)):
        node = ol.stencil(lambda get: get(-4, 0) - get(4, 1) * 0.5, x, boundary)
        want = bits(ol.compute_g(node))
        assert bits(stream.compute_g(node, rows=1)) == want == bits(ol.compute_s(node))


@sim
def test_a_cast_result_and_the_memory_limit_stream_it():
    node = ol.stencil(five_point, X2, "mirror")
    want = bits(ol.compute_g(node, dtype=np.float32))
    ol.config.device_memory_limit = 3000
    got = ol.compute_g(node, dtype=np.float32)
    assert isinstance(got, np.ndarray)
    assert bits(got) == want


@sim
def test_a_stencil_over_a_collective_is_no_single_streamed_stencil():
    """``ol.stream.plan`` plans one streamed part; a stencil of a scan or of a stencil is
    two (``offload.stream.composite`` computes them one after the other)."""
    for inner in (ol.scanl1(lambda a, b: a + b, X2), ol.stencil(five_point, X2, "wrap")):
        node = ol.stencil(five_point, inner, "clamp")
        holds = f"the stencil's source holds a {type(inner).__name__}"
        with pytest.raises(StreamUnsupported, match=holds):
            stream.plan(node, rows=4)
        assert bits(stream.compute_g(node, rows=4)) == bits(ol.compute_g(node))


@gpu
@pytest.mark.parametrize("boundary", BOUNDARIES.values(), ids=BOUNDARIES.keys())
def test_a_streamed_stencil_on_the_gpu_has_the_unstreamed_bits(boundary):
    x = RNG.standard_normal((3000, 257)).astype(np.float32)
    node = ol.stencil(five_point, ol.map(lambda v: v * 0.5, x), boundary)
    want = bits(ol.compute_g(node))
    for rows in (7, 512):
        assert bits(stream.compute_g(node, rows=rows)) == want
