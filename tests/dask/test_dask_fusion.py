"""A fold, scan or segmented fold or scan over Dask arrays whose source is element-wise
(maps and zip_withs of arrays of one shape) reads the arrays' blocks in its own tasks: no
block of the producer is computed apart (``offload.dask.producers``). The results equal
compute_s of the same node bit for bit; a source that moves indices, or whose function
reads a Dask array, keeps the element path and gives the same bits."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
old = pytest.importorskip("offload.dask")
producers = pytest.importorskip("offload.dask.producers")

pytestmark = pytest.mark.cpu

RNG = np.random.default_rng(5)
IN = RNG.integers(-1000, 1000, (7, 23))
IN2 = RNG.integers(-50, 50, (7, 23))
FN = RNG.random((7, 23))
UNEVEN = ((3, 4), (5, 0, 7, 1, 10))


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def bigger(a, b):
    return max(a, b)


def square(v):
    return v * v


def min_max(a, b):
    return min(a[0], b[0]), max(a[1], b[1])


def both(v):
    return v, v


def keys(y):
    return {k[0] if isinstance(k, tuple) else k for k in dict(y.__dask_graph__())}


def element_blocks(y):
    """The graph's tasks from the element path (a producer computed apart)."""
    return [k for k in keys(y) if k.startswith("offload-elements-") and k.endswith("-b")]


def same_bits(got, want):
    got = np.asarray(got)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    assert got.tobytes() == want.tobytes()


def run(make, arrays, chunks, fused=True, scheduler="threads"):
    dasks = [da.from_array(a, chunks=c) for a, c in zip(arrays, chunks, strict=True)]
    y = old.compute(make(*dasks))
    ys = y if isinstance(y, tuple) else (y,)
    assert all(bool(element_blocks(v)) != fused for v in ys)
    with dask.config.set(scheduler=scheduler):
        got = dask.compute(*ys)
    want = ol.compute_s(make(*arrays))
    for g, w in zip(got, want if isinstance(want, tuple) else (want,), strict=True):
        same_bits(g, w)


CASES = {
    "fold_all of a map": (lambda x, y: ol.fold_all(add, 0, ol.map(square, x)), False),
    "dot product": (lambda x, y: ol.fold_all(add, 0, ol.zip_with(mul, x, y)), False),
    "rows of a zip_with": (lambda x, y: ol.fold(add, 0, ol.zip_with(mul, x, y)), False),
    "fold1 of a map": (lambda x, y: ol.fold1(bigger, ol.map(square, x)), False),
    "a map of a zip_with": (
        lambda x, y: ol.fold_all(add, 0, ol.map(square, ol.zip_with(mul, x, y))),
        False,
    ),
    "one array read twice": (lambda x, y: ol.fold(add, 0, ol.zip_with(mul, x, x)), False),
    "a tuple-valued map": (lambda x, y: ol.fold1(min_max, ol.map(both, x)), False),
    "a tuple-valued zip_with": (
        lambda x, y: ol.fold1(min_max, ol.zip_with(lambda a, b: (a - b, a + b), x, y)),
        False,
    ),
}


SEG = np.array([4, 0, 19])

CASES.update(
    {
        "scanl of a map": (lambda x, y: ol.scanl(add, 0, ol.map(square, x)), False),
        "scanl1 of a zip_with": (lambda x, y: ol.scanl1(add, ol.zip_with(mul, x, y)), False),
        "scanr1 of a map (max)": (lambda x, y: ol.scanr1(bigger, ol.map(square, x)), False),
        "scanl_total of a zip_with": (
            lambda x, y: ol.scanl_total(add, 0, ol.zip_with(mul, x, y))[0],
            False,
        ),
        "fold_seg of a zip_with": (
            lambda x, y: ol.fold_seg(add, 0, ol.zip_with(mul, x, y), SEG),
            False,
        ),
        "scanl_seg of a map": (lambda x, y: ol.scanl_seg(add, 0, ol.map(square, x), SEG), False),
        "scanl1_seg of a tuple map": (
            lambda x, y: ol.scanl1_seg(min_max, ol.map(both, x), SEG),
            False,
        ),
    }
)


def blur(get):
    return get(-1, 0) * 0.25 + get(0, 0) * 0.5 + get(1, 1) * 0.25


for _b in ("clamp", "mirror", "wrap", ol.constant(-1.5)):
    CASES[f"stencil of a zip_with ({_b})"] = (
        lambda x, y, b=_b: ol.stencil(blur, ol.zip_with(lambda a, c: a * 0.5 - c, x, y), b),
        False,
    )


@pytest.mark.parametrize("make", [m for m, _ in CASES.values()], ids=CASES.keys())
@pytest.mark.parametrize(
    "chunks",
    [(UNEVEN, UNEVEN), (UNEVEN, ((7,), (12, 11))), (((7,), (23,)), ((2, 5), (23,)))],
    ids=["alike", "y chunked otherwise", "rows only"],
)
def test_element_wise_sources_fuse_into_the_collective_and_give_compute_s_bits(make, chunks):
    run(make, [IN, IN2], chunks)


def test_a_numpy_array_beside_a_dask_array_is_fused_too():
    x = da.from_array(IN, chunks=UNEVEN)
    for node, want in (
        (ol.zip_with(mul, x, IN2), ol.zip_with(mul, IN, IN2)),
        (ol.zip_with(mul, IN2, x), ol.zip_with(mul, IN2, IN)),  # NumPy first
    ):
        y = old.compute(ol.fold_all(add, 0, node))
        assert not element_blocks(y)
        assert not [k for k in keys(y) if "rechunk" in k]  # the NumPy array follows x
        with dask.config.set(scheduler="threads"):
            same_bits(y.compute(), ol.compute_s(ol.fold_all(add, 0, want)))


def test_float_folds_are_the_same_bits_as_the_unfused_tree():
    """Fusing changes where the map runs, not the combine tree: the element path (forced
    by reading through a backpermute of the identity) gives the same bits."""
    x = da.from_array(FN, chunks=UNEVEN)
    fused = old.compute(ol.fold_all(add, 0.0, ol.map(square, x)))
    ident = ol.backpermute(FN.shape, lambda i, j: (i, j), x)
    apart = old.compute(ol.fold_all(add, 0.0, ol.map(square, ident)))
    assert not element_blocks(fused) and element_blocks(apart)
    with dask.config.set(scheduler="threads"):
        a, b = dask.compute(fused, apart)
    assert a.tobytes() == b.tobytes()


def test_sources_that_move_indices_or_read_dask_arrays_keep_the_element_path():
    x = da.from_array(IN, chunks=UNEVEN)

    def shifted(i, j):
        return x[i, j] * 2 if j == 0 else x[i, j - 1]

    def reads_x(v):
        return v + x[0, 0]

    el = producers.elementwise
    assert el(ol.map(square, x)) is not None
    assert el(ol.from_function(x.shape, shifted)) is None  # reads at offsets
    assert el(ol.map(reads_x, x)) is None  # its function reads a Dask array
    assert el(ol.reverse(ol.map(square, x))) is None  # moves indices
    assert el(ol.map(square, ol.reverse(x))) is None
    assert el(ol.zip_with(mul, x, x[:, :5])) is None  # arrays of two shapes
    run(lambda a: ol.fold(add, 0, ol.reverse(ol.map(square, a))), [IN], [UNEVEN], fused=False)
    run(lambda a: ol.fold(add, 0, ol.reverse(ol.map(square, a))), [IN], [UNEVEN], fused=False)


def test_a_shared_producer_is_computed_once_not_fused():
    """A producer two folds read is materialised (the collectives' sharing rule)."""
    x = da.from_array(IN, chunks=UNEVEN)
    sq = ol.map(square, x)
    y = old.compute(ol.zip_with(add, ol.fold(add, 0, sq), ol.fold1(bigger, sq)))
    assert len(element_blocks(y)) == 2  # the squares, once; the zip_with of the folds
    sqn = ol.map(square, IN)
    with dask.config.set(scheduler="threads"):
        same_bits(
            y.compute(), ol.compute_s(ol.zip_with(add, ol.fold(add, 0, sqn), ol.fold1(bigger, sqn)))
        )


def test_a_rejected_map_is_a_located_error_at_graph_build():
    x = da.from_array(IN, chunks=UNEVEN)

    def bad(v):
        return [v]  # an allocation: rejected by the language

    with pytest.raises(ol.OffloadError) as err:
        old.compute(ol.fold_all(add, 0, ol.map(bad, x)))
    assert "test_dask_fusion.py" in str(err.value)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_local_cluster_of_two_processes_runs_the_fused_fold(cluster_client):
    x = da.from_array(FN, chunks=UNEVEN)
    y = da.from_array(FN[::-1].copy(), chunks=((7,), (12, 11)))
    dot = old.compute(ol.fold_all(add, 0.0, ol.zip_with(lambda a, b: a * b + 1.0, x, y)))
    assert not element_blocks(dot)
    got = cluster_client.compute(dot, sync=True)
    with dask.config.set(scheduler="threads"):
        assert np.asarray(got).tobytes() == dot.compute().tobytes()


def test_jobs_of_equal_content_share_a_token_so_workers_reuse_their_kernels():
    from offload.dask.runtime import Runner, job_token

    runner = Runner.for_target("s")
    assert job_token("fold", add, 0, runner) == job_token("fold", add, 0, runner)
    assert job_token("fold", add, 0, runner) != job_token("fold", add, 1, runner)
    assert job_token("fold", add, 0, runner) != job_token("fold", mul, 0, runner)
    lam = [lambda a, b, k=k: a + b + k for k in (1, 2)]
    assert job_token("fold", lam[0], 0, runner) != job_token("fold", lam[1], 0, runner)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_second_graph_of_the_same_fold_reuses_the_workers_jobs(cluster_client):
    from offload.dask import runtime

    x = da.from_array(FN, chunks=UNEVEN)

    def jobs():
        return sorted(set().union(*cluster_client.run(lambda: list(runtime._JOBS)).values()))

    def dot():
        return old.compute(ol.fold_all(add, 0.0, ol.zip_with(lambda a, b: a * b, x, x)))

    first = cluster_client.compute(dot(), sync=True)
    after_one = jobs()
    again = cluster_client.compute(dot(), sync=True)  # a new lambda of the same code
    assert jobs() == after_one
    assert np.asarray(first).tobytes() == np.asarray(again).tobytes()


def test_a_collective_of_an_element_tree_over_dask_arrays_builds_but_only_dask_computes_it():
    """The node's dtypes come from stand-ins of the Dask arrays (so the scan's checks run
    when it is built); compute_s cannot read a Dask array and says so."""
    x = da.from_array(IN, chunks=UNEVEN)
    node = ol.scanl(add, 0, ol.map(square, x))
    assert node.dtypes == (np.dtype(np.int64),)
    with pytest.raises(ol.OffloadError, match="must be an array"):
        ol.compute_s(node)
    with pytest.raises(TypeError):
        ol.scanl(add, 0.5j, ol.map(square, x))  # the neutral element is checked at build


def _bin(i):
    return ol.IGNORE if i % 5 == 4 else i % 3


def test_a_permute_and_a_filter_of_an_element_tree_over_dask_arrays():
    """The filter reads the arrays' blocks in its own tasks; the permute computes its
    source first."""
    v = IN[0]
    for make, fused in (
        (lambda a: ol.permute(add, np.zeros(3, np.int64), _bin, ol.map(square, a)), False),
        (lambda a: ol.filter(lambda t: t > 100, ol.map(square, a)), True),
        (lambda a: ol.filter(lambda t: t[0] > t[1], ol.zip_with(both2, a, a[::-1])), True),
    ):
        y = old.compute(make(da.from_array(v, chunks=((5, 0, 7, 1, 10),))))
        ys = y if isinstance(y, tuple) else (y,)
        assert all(bool(element_blocks(c)) != fused for c in ys)
        with dask.config.set(scheduler="threads"):
            got = dask.compute(*ys)
        want = ol.compute_s(make(v))
        for g, w in zip(got, want if isinstance(want, tuple) else (want,), strict=True):
            same_bits(g, w)


def both2(a, b):
    return a, b


def test_a_token_sees_the_contents_of_captured_arrays():
    from offload.dask.runtime import Runner, job_token

    runner = Runner.for_target("s")
    table = np.arange(1000.0)

    def shifted(a, b):
        return a + b + table[3]

    before = job_token("fold", shifted, 0.0, runner)
    assert job_token("fold", shifted, 0.0, runner) == before
    table[3] = -1.0  # changed in place: a worker must not reuse the old job
    assert job_token("fold", shifted, 0.0, runner) != before
    strided = np.arange(20.0)[::2]  # (pickled in band)
    first = job_token("v", strided)
    assert job_token("v", strided) == first
    strided[1] = 7.5
    assert job_token("v", strided) != first
