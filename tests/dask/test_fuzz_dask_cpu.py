"""Differential fuzzing of offload.dask on the CPU targets ("s", "p"): random uneven
chunkings (chunks of size 1, empty chunks, one chunk, many tiny chunks) of ranks 1-3,
against ``ol.compute_s`` of the same program on the whole NumPy array, bit for bit
wherever docs/dask.md ("Bits") promises it: element functions reading captured Dask
arrays at offsets (halos) and of global indices, folds and scans of integers, bools and
exactly representable floats (any combine, a non-commutative one too), segmented folds
and scans whose segments cross chunk boundaries, stencils with every boundary mode,
permute, scatter, filter, empty arrays. Threaded scheduler; a fixed set of module-level
functions, so that Numba compiles each kernel once for the whole module."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import offload as ol

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
old = pytest.importorskip("offload.dask")

pytestmark = pytest.mark.cpu

FUZZ = settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TARGETS = st.sampled_from(["s", "p"])


# --- helpers ---------------------------------------------------------------------------


@st.composite
def chunks_of(draw, n, *, empty=True):
    """A Dask chunking of an axis of ``n`` elements: random cuts, sometimes all ones,
    sometimes one chunk, sometimes with empty chunks."""
    if n == 0:
        return (0,) * draw(st.integers(1, 2))
    style = draw(st.sampled_from(["cuts", "cuts", "ones", "one"]))
    if style == "one":
        chunks = [n]
    elif style == "ones":
        chunks = [1] * n
    else:
        cuts = draw(st.lists(st.integers(0, n), max_size=min(n, 6)))
        bounds = sorted({0, n, *cuts})
        chunks = [b - a for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    if empty and draw(st.integers(0, 3)) == 0:
        chunks.insert(draw(st.integers(0, len(chunks))), 0)
    return tuple(chunks)


@st.composite
def grid(draw, rank, lo=1, hi=9):
    """A shape of ``rank`` and a chunking of it."""
    shape = tuple(draw(st.integers(lo, hi)) for _ in range(rank))
    return shape, tuple(draw(chunks_of(n)) for n in shape)


def values(seed, shape, dtype):
    """Random data: integers, bools, or small integers in floats (exactly representable,
    so any grouping of sums gives compute_s's bits)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "f":
        return rng.integers(-64, 64, shape).astype(dtype)
    return rng.integers(-1000, 1000, shape).astype(dtype)


def threads(*ys):
    with dask.config.set(scheduler="threads"):
        return dask.compute(*ys)


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


def same_bits(got, want):
    got, want = _tuple(got), _tuple(want)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
        assert g.tobytes() == w.tobytes(), (g, w)


def check(make, arrays, chunks, **kw):
    """``make`` of Dask versions of ``arrays`` (one chunking each) computed on threads,
    against compute_s of ``make`` of the arrays themselves."""
    dasks = [da.from_array(a, chunks=c) for a, c in zip(arrays, chunks, strict=True)]
    want = ol.compute_s(make(*arrays), **{k: v for k, v in kw.items() if k == "dtype"})
    y = old.compute(make(*dasks), **kw)
    same_bits(tuple(threads(*_tuple(y))), want)
    return y


# --- module-level functions (compiled once per kernel) -----------------------------------


def add(a, b):
    return a + b


def bigger(a, b):
    return max(a, b)


def either(a, b):
    return a or b


def differ(a, b):
    return a != b


def matmul2(a, b):
    """2x2 matrix product on row-major 4-tuples: associative, not commutative."""
    a0, a1, a2, a3 = a
    b0, b1, b2, b3 = b
    return (a0 * b0 + a1 * b2, a0 * b1 + a1 * b3, a2 * b0 + a3 * b2, a2 * b1 + a3 * b3)


IDENTITY = (1, 0, 0, 1)


def reads_1d(a, n):
    """Offsets both ways, a clamped read and a guarded one: halos from both sides."""

    def f(i):
        v = a[i] * 2 + a[min(i + 3, n - 1)]
        if i >= 2:
            v -= a[i - 2]
        if i + 1 < n:
            v += a[i + 1]
        return v + i * 3

    return f


def reads_2d(a, n, m):
    def f(i, j):
        v = a[i, j] + (i * 3 + j)
        if i > 0:
            v -= a[i - 1, j]
        if j + 2 < m:
            v += a[i, j + 2]
        return v + a[min(i + 3, n - 1), max(j - 1, 0)]

    return f


def reads_3d(a, n, m, k):
    def f(i, j, k3):
        v = a[i, j, k3] * 2 + (i * 3 + j) * 5 - k3
        if k3 > 0:
            v -= a[i, j, k3 - 1]
        if i + 1 < n:
            v += a[i + 1, j, k3]
        return v + a[i, min(j + 2, m - 1), k3]

    return f


def reads_bool(a, n):
    def f(i):
        return a[i] and not a[min(i + 1, n - 1)]

    return f


def reversed_and_strided(a, n):
    def f(i):
        return a[n - 1 - i] * 3 + a[i // 2] - a[min(2 * i, n - 1)]

    return f


def two_arrays(a, b):
    def f(i):
        return a[i] * b[max(i - 1, 0)] + b[i]

    return f


def global_index(i, j, k):
    return i * 3 + j - k * 7


READS = {1: reads_1d, 2: reads_2d, 3: reads_3d}


def square_less_3(v):
    return v * v - 3


def positive(v):
    return v > 0


def blur1(get):
    return get(-1) - 2 * get(0) + get(3)


def blur2(get):
    return get(-1, 0) - 2 * get(0, 0) + get(2, -2)


def blur3(get):
    return get(-1, 0, 1) - 2 * get(0, 0, 0) + get(0, 2, -1)


BLURS = {1: blur1, 2: blur2, 3: blur3}


def bins5(i):
    return ol.IGNORE if i % 7 == 3 else (i * 3) % 5


def bins5_2d(i, j):
    return ol.IGNORE if (i + j) % 7 == 3 else (i * 3 + j) % 5


def newest(new, old):
    return new


# --- element functions -------------------------------------------------------------------


RANK_DTYPES = {1: "int32", 2: "float64", 3: "int64"}


@FUZZ
@given(data=st.data(), rank=st.integers(1, 3), target=TARGETS, seed=st.integers(0, 99))
def test_element_functions_reading_at_offsets_equal_compute_s(data, rank, target, seed):
    dtype = RANK_DTYPES[rank]
    shape, chunks = data.draw(grid(rank, hi=9 if rank < 3 else 5))
    out = data.draw(st.none() | st.tuples(*(chunks_of(n) for n in shape)))
    xn = values(seed, shape, dtype)
    x = da.from_array(xn, chunks=chunks)
    make = READS[rank]
    y = old.compute(shape, make(x, *shape), target=target, chunks=out)
    assert y.chunks == (chunks if out is None else out)
    same_bits(threads(y)[0], ol.compute_s(shape, make(xn, *shape)))


@FUZZ
@given(data=st.data(), seed=st.integers(0, 99))
def test_element_functions_of_bools_reversed_strided_and_two_arrays(data, seed):
    target = "s"
    (n,), (c,) = data.draw(grid(1, hi=13))
    c2 = data.draw(chunks_of(n))
    bn = values(seed, (n,), bool)
    got = threads(old.compute(n, reads_bool(da.from_array(bn, chunks=(c,)), n), target=target))
    same_bits(got[0], ol.compute_s(n, reads_bool(bn, n)))
    xn, yn = values(seed, (n,), np.int64), values(seed + 1, (n,), np.int64)
    x, y = da.from_array(xn, chunks=(c,)), da.from_array(yn, chunks=(c2,))
    ys = (
        old.compute(n, reversed_and_strided(x, n), target=target, chunks=(c2,)),
        old.compute(n, two_arrays(x, y), target=target),
    )
    want = (ol.compute_s(n, reversed_and_strided(xn, n)), ol.compute_s(n, two_arrays(xn, yn)))
    same_bits(threads(*ys), want)


@FUZZ
@given(data=st.data(), target=TARGETS)
def test_functions_of_global_indices(data, target):
    shape, chunks = data.draw(grid(3, hi=6))
    y = old.compute(shape, global_index, target=target, chunks=chunks)
    same_bits(threads(y)[0], ol.compute_s(shape, global_index))


# --- folds and scans ---------------------------------------------------------------------

FOLDS = {
    "fold add": lambda z: lambda x: ol.fold(add, z, x),
    "fold1 max": lambda z: lambda x: ol.fold1(bigger, x),
    "fold_all add": lambda z: lambda x: ol.fold_all(add, z, x),
    "fold_all max": lambda z: lambda x: ol.fold_all(bigger, z, x),
    "fold of a map": lambda z: lambda x: ol.fold(add, z, ol.map(square_less_3, x)),
}
SCANS = {
    "scanl": lambda z: lambda x: ol.scanl(add, z, x),
    "scanl1": lambda z: lambda x: ol.scanl1(add, x),
    "scanr": lambda z: lambda x: ol.scanr(add, z, x),
    "scanr1 max": lambda z: lambda x: ol.scanr1(bigger, x),
    "scanl from 5": lambda z: lambda x: ol.scanl(add, z + 5, x),  # z need not be neutral
    "scanl_total scan": lambda z: lambda x: ol.scanl_total(add, z, x)[0],
    "scanr_total total": lambda z: lambda x: ol.scanr_total(add, z, x)[1],
}


@FUZZ
@given(
    data=st.data(),
    rank=st.integers(1, 3),
    name=st.sampled_from(sorted(FOLDS)),
    dtype=st.sampled_from(["int32", "float64"]),
    split_every=st.integers(2, 4),
    seed=st.integers(0, 99),
)
def test_folds_equal_compute_s(data, rank, name, dtype, split_every, seed):
    shape, chunks = data.draw(grid(rank, lo=0 if rank == 1 else 1, hi=11 if rank < 3 else 5))
    op = FOLDS[name](np.dtype(dtype).type(0))
    check(op, [values(seed, shape, dtype)], [chunks], split_every=split_every)


@FUZZ
@given(
    data=st.data(),
    rank=st.integers(1, 3),
    name=st.sampled_from(sorted(SCANS)),
    dtype=st.sampled_from(["int64", "float32"]),
    seed=st.integers(0, 99),
)
def test_scans_across_chunk_boundaries_equal_compute_s(data, rank, name, dtype, seed):
    shape, chunks = data.draw(grid(rank, hi=11 if rank < 3 else 5))
    op = SCANS[name](np.dtype(dtype).type(0))
    check(op, [values(seed, shape, dtype)], [chunks])


BOOL_OPS = [
    lambda x: ol.fold_all(either, False, x),
    lambda x: ol.fold1(differ, x),
    lambda x: ol.fold(add, False, x),
    lambda x: ol.scanl1(either, x),
    lambda x: ol.scanr(differ, False, x),
    lambda x: ol.fold_seg(either, False, x, np.array([2, 0, 3, x.shape[-1] - 5])),
]


@settings(FUZZ, max_examples=3)
@given(data=st.data(), k=st.integers(0, len(BOOL_OPS) - 1), seed=st.integers(0, 99))
def test_bool_folds_and_scans(data, k, seed):
    shape = (data.draw(st.integers(1, 4)), data.draw(st.integers(5, 12)))
    chunks = tuple(data.draw(chunks_of(n)) for n in shape)
    check(BOOL_OPS[k], [values(seed, shape, bool)], [chunks])


MATRIX_OPS = {
    "scanl1": lambda m: ol.scanl1(matmul2, m),
    "scanr": lambda m: ol.scanr(matmul2, IDENTITY, m),
    "fold": lambda m: ol.fold(matmul2, IDENTITY, m),
    "fold_all": lambda m: ol.fold_all(matmul2, IDENTITY, m),
    "fold_seg": lambda m: ol.fold_seg(matmul2, IDENTITY, m, np.array([3, 0, m[0].shape[-1] - 3])),
}


def matrices(seed, shape):
    """Rows of [[1, 1], [0, 1]] and [[1, 0], [1, 1]]: they do not commute."""
    s = np.random.default_rng(seed).integers(0, 2, shape)
    return [np.ones(shape, np.int64), s, 1 - s, np.ones(shape, np.int64)]


@settings(FUZZ, max_examples=2)
@given(
    data=st.data(),
    name=st.sampled_from(sorted(MATRIX_OPS)),
    split_every=st.integers(2, 3),
    seed=st.integers(0, 99),
)
def test_a_non_commutative_combine_keeps_the_order(data, name, split_every, seed):
    shape = (data.draw(st.integers(1, 3)), data.draw(st.integers(4, 16)))
    # the four components chunked differently (aligned to the first's)
    chunks = [tuple(data.draw(chunks_of(n)) for n in shape) for _ in range(4)]
    op = MATRIX_OPS[name]
    check(lambda *m: op(m), matrices(seed, shape), chunks, split_every=split_every)


# --- segments ----------------------------------------------------------------------------

SEGMENTED = {
    "fold_seg": lambda seg: lambda x: ol.fold_seg(add, 0.0, x, seg),
    "fold_seg max": lambda seg: lambda x: ol.fold_seg(bigger, -1.0, x, seg),
    "scanl_seg": lambda seg: lambda x: ol.scanl_seg(add, 0.0, x, seg),
    "scanl1_seg": lambda seg: lambda x: ol.scanl1_seg(add, x, seg),
}


@FUZZ
@given(
    data=st.data(),
    name=st.sampled_from(sorted(SEGMENTED)),
    rows=st.integers(0, 3),
    lengths=st.lists(st.integers(0, 6), min_size=1, max_size=6),
    seed=st.integers(0, 99),
)
def test_segments_crossing_chunk_boundaries(data, name, rows, lengths, seed):
    n = sum(lengths)
    shape = (rows, n) if rows else (n,)
    chunks = tuple(data.draw(chunks_of(k)) for k in shape)
    xn = np.random.default_rng(seed).random(shape)  # any floats: one piece per segment
    check(SEGMENTED[name](np.array(lengths)), [xn], [chunks])


# --- stencils ----------------------------------------------------------------------------


@FUZZ
@given(
    data=st.data(),
    rank=st.integers(1, 3),
    boundary=st.sampled_from(["clamp", "mirror", "wrap", "constant"]),
    seed=st.integers(0, 99),
)
def test_stencils_with_every_boundary(data, rank, boundary, seed):
    # extents at least the reach (3); shorter axes: the test below
    shape, chunks = data.draw(grid(rank, lo=4, hi=9 if rank < 3 else 5))
    xn = np.random.default_rng(seed).random(shape)  # any floats: the same element kernel
    b = ol.constant(-1.5) if boundary == "constant" else boundary
    blur = BLURS[rank]
    check(lambda x: ol.stencil(blur, x, b), [xn], [chunks])


@pytest.mark.parametrize("boundary", ["clamp", "mirror", "wrap", "constant"])
def test_a_stencil_reaching_past_a_short_axis_of_several_chunks(boundary):
    """Regression: at 5a29b24 an axis of several chunks shorter than the stencil's reach
    raised Dask's "ValueError: The overlapping depth 3 is larger than your array 2"
    (offload/dask/stencils.py, stencil_tree: ensure_minimum_chunksize / overlap)."""
    b = ol.constant(-1.5) if boundary == "constant" else boundary
    for n in (1, 2, 3):
        xn = np.random.default_rng(n).random(n)
        for chunks in sorted({(1,) * n, (0, n), (n - 1, 1)}):
            check(lambda x: ol.stencil(blur1, x, b), [xn], [(chunks,)])
    x2 = np.random.default_rng(0).random((2, 5))
    check(lambda x: ol.stencil(blur2, x, b), [x2], [((1, 1), (2, 3))])


# --- permute, scatter, filter ------------------------------------------------------------


@FUZZ
@given(
    data=st.data(),
    rank=st.integers(1, 2),
    f=st.sampled_from([add, newest, bigger]),
    split_every=st.integers(2, 4),
    seed=st.integers(0, 99),
)
def test_permutes_equal_compute_s(data, rank, f, split_every, seed):
    shape, chunks = data.draw(grid(rank, lo=0 if rank == 1 else 1, hi=15 if rank == 1 else 6))
    defaults = values(seed + 1, (5,), np.int64)
    ix = bins5 if rank == 1 else bins5_2d
    check(
        lambda x: ol.permute(f, defaults, ix, x),
        [values(seed, shape, np.int64)],
        [chunks],
        split_every=split_every,
    )


@FUZZ
@given(
    data=st.data(),
    n=st.integers(0, 15),
    dtype=st.sampled_from(["int32", "float64"]),
    seed=st.integers(0, 99),
)
def test_scatter_and_filter_equal_compute_s(data, n, dtype, seed):
    rng = np.random.default_rng(seed)
    xn = rng.random(n) - 0.5 if dtype == "float64" else values(seed, (n,), dtype)
    to = rng.integers(-1, 6, n)
    to[to < 0] = ol.IGNORE
    defaults = values(seed + 1, (6,), dtype)
    chunks = [(data.draw(chunks_of(n)),), (data.draw(chunks_of(n)),)]
    check(lambda t, x: ol.scatter(t, defaults, x), [to, xn], chunks)
    y = check(lambda x: ol.filter(positive, x), [xn], chunks[1:])
    assert len(y.chunks[0]) == len(chunks[1][0])


# --- target "p" --------------------------------------------------------------------------

ON_P = {
    "fold": lambda x: ol.fold(add, 0, x),
    "fold_all": lambda x: ol.fold_all(add, 0, x),
    "scanl": lambda x: ol.scanl(add, 0, x),
    "fold_seg": lambda x: ol.fold_seg(add, 0, x, np.array([2, 0, x.shape[-1] - 2])),
    "stencil": lambda x: ol.stencil(blur2, x, "wrap"),
    "permute": lambda x: ol.permute(add, np.zeros(5, np.int64), bins5_2d, x),
}


@settings(FUZZ, max_examples=3)
@given(data=st.data(), name=st.sampled_from(sorted(ON_P)), seed=st.integers(0, 99))
def test_collectives_on_target_p(data, name, seed):
    shape, chunks = data.draw(grid(2, lo=4, hi=10))
    check(ON_P[name], [values(seed, shape, np.int64)], [chunks], target="p")


# --- empty arrays and bits of floats -----------------------------------------------------

EMPTY_OPS = {
    "fold_all": lambda z: lambda x: ol.fold_all(bigger, z, x),
    "fold": lambda z: lambda x: ol.fold(add, z, x),
    "scanl": lambda z: lambda x: ol.scanl(add, z, x),
    "scanr1": lambda z: lambda x: ol.scanr1(add, x),
    "map": lambda z: lambda x: ol.map(square_less_3, x),
}


@pytest.mark.parametrize("dtype", ["int32", "bool"])
@pytest.mark.parametrize(
    ("shape", "chunks"),
    [((0,), ((0,),)), ((3, 0), ((2, 1), (0,))), ((0, 4), ((0,), (2, 2)))],
    ids=["0", "3x0", "0x4"],
)
def test_empty_arrays(shape, chunks, dtype):
    xn = np.zeros(shape, dtype)
    z = np.dtype(dtype).type(0)
    ops = {k: v for k, v in EMPTY_OPS.items() if dtype != "bool" or k != "map"}
    for op in ops.values():
        check(op(z), [xn], [chunks])
    if len(shape) == 1:
        check(lambda x: ol.filter(positive, x), [xn], [chunks])
        check(lambda x: ol.permute(bigger, np.ones(3, dtype), bins5, x), [xn], [chunks])


@FUZZ
@given(data=st.data(), target=TARGETS, seed=st.integers(0, 99))
def test_float_rows_of_one_chunk_equal_compute_s_for_any_floats(data, target, seed):
    rows = data.draw(st.integers(1, 6))
    n = data.draw(st.integers(1, 40))
    xn = np.random.default_rng(seed).random((rows, n))
    chunks = ((data.draw(chunks_of(rows)), (n,)),)
    check(lambda x: ol.fold(add, 0.0, x), [xn], chunks, target=target)
    check(lambda x: ol.scanl1(add, x), [xn], chunks)  # scans: target "s" only


def test_fold_all_of_a_matrix_with_an_empty_row_chunk():
    # (found by CI's draw of test_bool_folds_and_scans: Dask's reshape refused the empty
    # block of the rows' chunks (0, 2))
    xn = np.arange(10).reshape(2, 5) % 3 == 0
    check(lambda x: ol.fold_all(either, False, x), [xn], [((0, 2), (5,))])
