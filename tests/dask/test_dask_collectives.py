"""offload.dask.compute of the collectives over Dask arrays: folds as fixed combine trees,
scans carried across chunk boundaries, segmented folds and scans whose segments cross
chunks, stencils on blocks with halos, and the element maps around them; equal to
compute_s of the same node on the NumPy arrays bit for bit wherever the grouping cannot
change the bits (integers, exactly representable floats, one chunk per row, segments,
stencils), the same bits run to run and on every scheduler otherwise."""

from __future__ import annotations

import linecache
import pickle
import sys
import traceback

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import offload as ol

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
old = pytest.importorskip("offload.dask")

pytestmark = pytest.mark.cpu

RNG = np.random.default_rng(21)
IN = RNG.integers(-1000, 1000, (7, 23))
FN = RNG.random((7, 23))
CHUNKINGS = {
    "uneven with an empty chunk": ((3, 4), (5, 0, 7, 1, 10)),
    "one chunk": ((7,), (23,)),
    "many small chunks": ((2, 2, 2, 1), (2,) * 11 + (1,)),
}


def add(a, b):
    return a + b


def bigger(a, b):
    return max(a, b)


def matmul2(a, b):
    """2x2 matrix product on row-major 4-tuples: associative, not commutative."""
    a0, a1, a2, a3 = a
    b0, b1, b2, b3 = b
    return (a0 * b0 + a1 * b2, a0 * b1 + a1 * b3, a2 * b0 + a3 * b2, a2 * b1 + a3 * b3)


def threads(*ys, scheduler="threads"):
    with dask.config.set(scheduler=scheduler):
        return dask.compute(*ys)


def same_bits(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        g = np.asarray(g)
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
        assert g.tobytes() == w.tobytes()


def check(make, arrays, chunks, scheduler="threads", **kw):
    """``make`` applied to Dask versions of ``arrays`` (chunked ``chunks``) against
    compute_s of it on the arrays themselves."""
    dasks = [da.from_array(a, chunks=chunks) for a in arrays]
    y = old.compute(make(*dasks), **kw)
    got = threads(*(y if isinstance(y, tuple) else (y,)), scheduler=scheduler)
    same_bits(tuple(got), _tuple(ol.compute_s(make(*arrays))))
    return y


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


FOLDS = {
    "fold": lambda x: ol.fold(add, 0, x),
    "fold1 (max)": lambda x: ol.fold1(bigger, x),
    "fold_all": lambda x: ol.fold_all(add, 0, x),
    "fold of a zip_with": lambda x: ol.fold(add, 0, ol.zip_with(lambda a, b: a * b - 3, x, x)),
}


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("op", FOLDS.values(), ids=FOLDS.keys())
def test_integer_folds_equal_compute_s_bit_for_bit(op, chunks):
    y = check(op, [IN], chunks, split_every=3)
    assert y.chunks == chunks[:-1] or y.ndim == 0


def test_a_fold_tree_of_many_levels_and_target_p():
    x = da.from_array(IN, chunks=(7, 1))  # 23 partials per row: levels of 2
    for target in ("s", "p"):
        y = old.compute(ol.fold(add, 0, x), target=target, split_every=2)
        (got,) = threads(y)
        same_bits(got, ol.compute_s(ol.fold(add, 0, IN)))


SCANS = {
    "scanl": lambda x: ol.scanl(add, 0, x),
    "scanl1": lambda x: ol.scanl1(add, x),
    "scanr": lambda x: ol.scanr(add, 0, x),
    "scanr1": lambda x: ol.scanr1(add, x),
    "scanl_total scan": lambda x: ol.scanl_total(add, 0, x)[0],
    "scanl_total total": lambda x: ol.scanl_total(add, 0, x)[1],
    "scanr_total scan": lambda x: ol.scanr_total(add, 0, x)[0],
    "scanr_total total": lambda x: ol.scanr_total(add, 0, x)[1],
}


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("op", SCANS.values(), ids=SCANS.keys())
def test_integer_scans_equal_compute_s_across_chunk_boundaries(op, chunks):
    check(op, [IN], chunks)


def test_scan_chunks_hold_the_extra_element_in_the_first_or_last_block():
    x = da.from_array(IN, chunks=CHUNKINGS["uneven with an empty chunk"])
    assert old.compute(ol.scanl(add, 0, x)).chunks[-1] == (6, 0, 7, 1, 10)
    assert old.compute(ol.scanr(add, 0, x)).chunks[-1] == (5, 0, 7, 1, 11)
    assert old.compute(ol.scanl1(add, x)).chunks[-1] == (5, 0, 7, 1, 10)


_S = RNG.integers(0, 2, (3, 40))
MATS = [np.ones((3, 40), np.int64), _S, 1 - _S, np.ones((3, 40), np.int64)]
"""Rows of the matrices [[1, 1], [0, 1]] and [[1, 0], [1, 1]]: they do not commute, and
their products (determinant 1) never wrap to zero."""
IDENTITY = (1, 0, 0, 1)


@pytest.mark.parametrize(
    "op",
    [
        lambda m: ol.scanl1(matmul2, m),
        lambda m: ol.scanr1(matmul2, m),
        lambda m: ol.scanl(matmul2, IDENTITY, m),
        lambda m: ol.scanr(matmul2, IDENTITY, m),
        lambda m: ol.fold(matmul2, IDENTITY, m),
        lambda m: ol.fold1(matmul2, m),
        lambda m: ol.fold_all(matmul2, IDENTITY, m),
    ],
    ids=["scanl1", "scanr1", "scanl", "scanr", "fold", "fold1", "fold_all"],
)
def test_a_non_commutative_combine_keeps_the_order_across_chunks(op):
    # The four components come chunked differently: they are aligned to the first's.
    chunkings = [((2, 1), (7, 13, 20)), ((3,), (40,)), ((1, 2), (1,) * 40), ((3,), (25, 15))]
    dasks = tuple(da.from_array(m, chunks=c) for m, c in zip(MATS, chunkings, strict=True))
    got = threads(*old.compute(op(dasks), split_every=2))
    want = ol.compute_s(op(tuple(MATS)))
    same_bits(tuple(got), want)


def test_the_matrices_do_not_commute():
    """(So the test above would see blocks combined out of order.)"""
    forward = ol.compute_s(ol.fold(matmul2, IDENTITY, tuple(MATS)))
    backward = ol.compute_s(ol.fold(matmul2, IDENTITY, tuple(m[:, ::-1].copy() for m in MATS)))
    assert all(any(a[r] != b[r] for a, b in zip(forward, backward, strict=True)) for r in range(3))


EXACT = {
    "float64": RNG.integers(-(2**20), 2**20, (5, 161)).astype(np.float64),
    "float32": RNG.integers(-(2**10), 2**10, (5, 161)).astype(np.float32),
}


@pytest.mark.parametrize("dtype", EXACT.keys())
@pytest.mark.parametrize(
    "op",
    [
        lambda x: ol.fold_all(add, 0.0, x),
        lambda x: ol.fold(add, 0.0, x),
        lambda x: ol.scanl1(add, x),
        lambda x: ol.scanr(add, 0.0, x),
    ],
    ids=["fold_all", "fold", "scanl1", "scanr"],
)
def test_exactly_representable_floats_equal_compute_s(op, dtype):
    check(op, [EXACT[dtype]], ((2, 3), (40, 1, 60, 60)))
    check(op, [EXACT[dtype]], ((5,), (17,) * 9 + (8,)))  # fold_all: innermost axis first


def test_float_results_are_the_same_bits_run_to_run_and_on_every_scheduler():
    x = da.from_array(FN, chunks=((3, 4), (5, 0, 7, 1, 10)))
    ys = [old.compute(ol.fold_all(add, 0.0, x)), old.compute(ol.scanl1(add, x))]
    first = threads(*ys)
    again = threads(*[old.compute(ol.fold_all(add, 0.0, x)), old.compute(ol.scanl1(add, x))])
    with dask.config.set(scheduler="synchronous"):
        sync = dask.compute(*ys)
    for a, b, c in zip(first, again, sync, strict=True):
        assert a.tobytes() == b.tobytes() == c.tobytes()
    assert abs(first[0] - FN.sum()) < 1e-9
    np.testing.assert_allclose(first[1], np.cumsum(FN, axis=-1), rtol=1e-12)


def test_one_chunk_per_row_gives_compute_s_bits_for_any_floats():
    chunks = ((3, 4), (23,))
    for op in (lambda x: ol.fold(add, 0.0, x), lambda x: ol.scanl(add, 0.0, x)):
        check(op, [FN], chunks)
        # compute_p: the same fold plan; a row this short is one chunk of its scan tree.
        check(op, [FN], chunks, target="p")


@settings(max_examples=8, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 9), min_size=1, max_size=8),
    cuts=st.lists(st.integers(0, 60), max_size=6),
)
def test_segments_may_cross_chunk_boundaries(lengths, cuts):
    n = sum(lengths)
    seg = np.array(lengths)
    bounds = sorted({0, n, *(c for c in cuts if c <= n)})
    inner = tuple(b - a for a, b in zip(bounds[:-1], bounds[1:], strict=True)) or (0,)
    data = np.random.default_rng(n).random((3, n))
    for op in (
        lambda x: ol.fold_seg(add, 0.0, x, seg),
        lambda x: ol.scanl_seg(add, 0.0, x, seg),
        lambda x: ol.scanl1_seg(add, x, seg),
    ):
        # One thread: kernels compiled at once in several threads leave Python's recursion
        # limit raised (offload.emit.recursion), which Hypothesis reports.
        check(op, [data], ((2, 1), inner), scheduler="synchronous")


def blur(get):
    return get(-1, 0) + 2.0 * get(0, 0) - get(1, 1 + 1) * 0.5 + get(0, -3)


@pytest.mark.parametrize("boundary", ["clamp", "mirror", "wrap", ol.constant(-1.5)], ids=str)
def test_stencils_on_blocks_with_halos_equal_compute_s(boundary):
    # get(1, 1 + 1): an offset the source alone does not show; chunks narrower than 3.
    check(lambda x: ol.stencil(blur, x, boundary), [FN], ((2, 5), (3, 2, 8, 10)))


def test_a_wrapped_stencil_on_chunks_smaller_than_its_reach_and_on_one_chunk():
    v = RNG.random(17)
    far = lambda get: get(-3) - get(2)  # noqa: E731
    check(lambda x: ol.stencil(far, x, "wrap"), [v], ((1,) * 17,))
    check(lambda x: ol.stencil(far, x, "mirror"), [v], ((17,),))


def test_a_stencil_of_a_tuple_source_with_a_tuple_result():
    def swap(get):
        a, b = get(-1)
        c, d = get(1)
        return a + d, b * c

    check(lambda x, y: ol.stencil(swap, (x, y), "clamp"), [FN[0], FN[1]], ((5, 9, 9),))


def test_element_maps_fuse_around_collectives():
    check(
        lambda x, y: ol.map(lambda v: v * 2 + 1, ol.fold(add, 0, ol.zip_with(add, x, y))),
        [IN, IN[::-1].copy()],
        ((3, 4), (5, 0, 7, 1, 10)),
    )
    check(lambda x: ol.zip_with(add, ol.scanl1(add, x), x), [IN], ((3, 4), (11, 12)))
    check(
        lambda x: ol.stencil(blur, ol.map(lambda v: v * v, x), "mirror"),
        [FN],
        ((3, 4), (11, 12)),
    )


def test_a_shared_source_is_one_dask_array():
    x = da.from_array(IN, chunks=(4, 6))
    sq = ol.map(lambda v: v * v, x)
    both = ol.zip_with(add, ol.fold(add, 0, sq), ol.fold1(bigger, sq))
    (got,) = threads(old.compute(both))
    sqn = ol.map(lambda v: v * v, IN)
    same_bits(got, ol.compute_s(ol.zip_with(add, ol.fold(add, 0, sqn), ol.fold1(bigger, sqn))))


def test_empty_axes():
    e = np.zeros((3, 0), np.int64)
    for op in (
        lambda x: ol.fold(add, 5, x),
        lambda x: ol.fold_all(add, 5, x),
        lambda x: ol.scanl(add, 5, x),
        lambda x: ol.scanr(add, 5, x),
        lambda x: ol.scanl1(add, x),
        lambda x: ol.fold_seg(add, 5, x, np.array([0, 0])),
        lambda x: ol.scanl_seg(add, 5, x, np.array([0, 0])),
    ):
        check(op, [e], ((2, 1), (0,)))
    check(lambda x: ol.fold_all(add, 5, x), [np.zeros(0, np.int64)], ((0,),))


def test_chunks_and_dtype_of_a_collective_result():
    x = da.from_array(IN, chunks=(4, 6))
    y = old.compute(ol.scanl1(add, x), chunks=(7, 23))
    assert y.chunks == ((7,), (23,))
    z = old.compute(ol.fold(add, 0, x), dtype=np.float32)
    (got,) = threads(z)
    same_bits(got, ol.compute_s(ol.fold(add, 0, IN), dtype=np.float32))


def test_meta_is_given_so_no_kernel_runs_while_the_graph_is_built(monkeypatch):
    from offload.dask import runtime

    ran = []
    monkeypatch.setattr(runtime.Runner, "run", lambda self, node, dtype=None: ran.append(node))
    x = da.from_array(FN, chunks=(3, 5))
    nodes = [
        ol.fold(add, 0.0, x),
        ol.fold_all(add, 0.0, x),
        ol.scanl(add, 0.0, x),
        ol.fold_seg(add, 0.0, x, np.array([20, 3])),
        ol.stencil(blur, x, "wrap"),
    ]
    for node in nodes:
        y = old.compute(node)
        assert isinstance(y._meta, np.ndarray) and y._meta.dtype == np.float64
        assert y._meta.ndim == y.ndim
    assert ran == []


def test_what_dask_cannot_take_raises_at_graph_build_naming_it():
    x = da.from_array(IN[0], chunks=5)
    kept = ol.filter(lambda v: v > 0, x)
    for node, name in [
        (ol.map(lambda v: v + 1, kept), "'map'"),
        (ol.fold_all(add, 0, kept), "'fold'"),
    ]:
        with pytest.raises(old.DaskUnsupported, match=name) as err:
            old.compute(node)
        assert "unknown size" in str(err.value)
        frames = [f.filename for f in traceback.extract_tb(err.value.__traceback__)]
        assert not any("site-packages/dask" in f for f in frames)


def test_a_combine_the_language_rejects_is_a_located_error_at_graph_build():
    def noisy(a, b):
        print(a)
        return a + b

    x = da.from_array(IN, chunks=(4, 6))
    for node in (ol.fold(noisy, 0, x), ol.scanl1(noisy, x)):
        with pytest.raises(ol.OffloadError) as err:
            old.compute(node)
        assert "test_dask_collectives.py" in str(err.value) and "print(a)" in str(err.value)


W = da.from_array(np.array([1, 2, 3]), chunks=2)


def reads_w(a, b):
    return a + b * W[1]


def test_a_collective_function_reading_a_dask_array_is_refused_naming_it():
    x = da.from_array(IN, chunks=(4, 6))
    for node in (ol.fold(reads_w, 0, x), ol.scanl1(reads_w, x)):
        with pytest.raises(old.DaskUnsupported, match="reads the Dask array 'W'"):
            old.compute(node)


def test_sources_travel_with_functions_pickled_by_value():
    cloudpickle = pytest.importorskip("cloudpickle")
    from offload.dask.sources import DYNAMIC, collect, restore
    from offload.frontend.source import get_source

    file = "<offload-test-client-file>.py"
    text = (
        "X = 3\n\n\ndef helper(v):\n    return v * X\n\n\n"
        "def comb(a, b):\n    return helper(a) + b\n"
    )
    lines = text.splitlines(keepends=True)
    linecache.cache[file] = (len(text), None, lines, file)
    scope: dict[str, object] = {"__name__": "offload_test_client"}
    exec(compile(text, file, "exec"), scope)
    sources = collect(scope["comb"])
    shipped = pickle.dumps((cloudpickle.dumps(scope["comb"]), sources))
    del linecache.cache[file]  # the worker cannot read the client's file
    try:
        blob, sources = pickle.loads(shipped)
        comb = pickle.loads(blob)
        assert comb.__code__.co_filename == DYNAMIC
        restore(sources, comb)
        assert comb.__code__.co_filename == file
        assert get_source(comb).node.lineno == 8
        got = ol.compute_s(ol.fold(comb, 0, np.array([1, 2, 4])))
        assert got == ((0 * 3 + 1) * 3 + 2) * 3 + 4
    finally:
        linecache.cache.pop(file, None)


def _simulator_on():
    import os

    import numba

    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and bool(numba.config.ENABLE_CUDASIM)


@pytest.mark.sim
@pytest.mark.skipif(not _simulator_on(), reason="sim lane: NUMBA_ENABLE_CUDASIM=1 -m sim")
def test_target_g_in_the_simulator(monkeypatch):
    monkeypatch.setattr(ol.config, "gpu_simulator", True)
    v = IN[0]
    x = da.from_array(v, chunks=((5, 0, 7, 1, 10),))
    ys = [
        old.compute(ol.fold_all(add, 0, x), target="g"),
        old.compute(ol.scanl(add, 0, x), target="g"),
    ]
    # The simulator runs a kernel's threads as Python threads: one kernel at a time.
    got = threads(*ys, scheduler="synchronous")
    same_bits(tuple(got), (ol.compute_s(ol.fold_all(add, 0, v)), ol.compute_s(ol.scanl(add, 0, v))))


def _gpu_missing():
    if _simulator_on():
        return "gpu lane: the CUDA simulator is on"
    try:
        import cupy

        return None if cupy.cuda.runtime.getDeviceCount() > 0 else "gpu lane: no CUDA device"
    except Exception as exc:  # no CuPy, or no usable device
        return f"gpu lane: {type(exc).__name__}"


@pytest.mark.gpu
@pytest.mark.skipif(_gpu_missing() is not None, reason=str(_gpu_missing()))
def test_target_g_gives_cupy_chunks_and_compute_s_bits_for_integers():
    import cupy

    def on_gpu(a, chunks):
        return da.from_array(cupy.asarray(a), chunks=chunks, asarray=False)

    chunks = CHUNKINGS["uneven with an empty chunk"]
    for op in (*FOLDS.values(), *SCANS.values()):
        y = old.compute(op(on_gpu(IN, chunks)), target="g")
        assert type(y._meta).__module__.startswith("cupy")
        (got,) = threads(y)
        same_bits(cupy.asnumpy(got), ol.compute_s(op(IN)))
    mats = tuple(on_gpu(m, ((2, 1), (7, 13, 20))) for m in MATS)
    got = threads(*old.compute(ol.scanl1(matmul2, mats), target="g"))
    same_bits(tuple(cupy.asnumpy(g) for g in got), ol.compute_s(ol.scanl1(matmul2, tuple(MATS))))
    got = threads(old.compute(ol.stencil(blur, on_gpu(FN, chunks), "wrap"), target="g"))
    same_bits(cupy.asnumpy(got[0]), ol.compute_s(ol.stencil(blur, FN, "wrap")))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_local_cluster_of_two_processes_gives_the_same_bits(cluster_client):
    mats = tuple(da.from_array(m, chunks=((2, 1), (7, 13, 20))) for m in MATS)
    x = da.from_array(FN, chunks=((3, 4), (5, 0, 7, 1, 10)))
    ys = [
        *old.compute(ol.scanl1(lambda a, b: matmul2(a, b), mats)),  # a lambda: by value
        old.compute(ol.fold_all(add, 0.0, x)),
        old.compute(ol.stencil(blur, x, "mirror")),
        old.compute(ol.fold_seg(add, 0.0, x, np.array([4, 0, 19]))),
    ]
    got = cluster_client.compute(ys, sync=True)
    local = threads(*ys)
    for g, w in zip(got, local, strict=True):
        assert g.tobytes() == w.tobytes()
    same_bits(tuple(got[:4]), ol.compute_s(ol.scanl1(matmul2, MATS)))
    same_bits(got[5], ol.compute_s(ol.stencil(blur, FN, "mirror")))
    same_bits(got[6], ol.compute_s(ol.fold_seg(add, 0.0, FN, np.array([4, 0, 19]))))
    workers = cluster_client.run(lambda: sys.modules["os"].getpid())
    assert len(set(workers.values())) == 2
