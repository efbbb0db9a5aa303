"""offload.dask.compute of permute, scatter and filter over Dask arrays.

permute/scatter: each block of the source permuted with its global indices (the first into
the defaults, the later ones into partials with a mask of the cells reached), the
partials merged in block order by a fixed tree. Equal to compute_s of the same node on
the NumPy arrays bit for bit wherever the combine is exact (integers, any associative
combine; scatter always) or the source is one chunk; for a float ``+`` over several
chunks, the bits of the block-order tree of compute_s's block partials -- the same run
to run and on every scheduler, differing from compute_s by rounding only.
filter: each block filtered on its own, in order: compute_s's elements, chunks unknown.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import offload as ol

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
old = pytest.importorskip("offload.dask")

pytestmark = pytest.mark.cpu

RNG = np.random.default_rng(2121)
N = 23
IN = RNG.integers(-1000, 1000, N)
FN = RNG.random(N)
DEF_I = RNG.integers(-5, 5, 6)
DEF_F = RNG.random(6)
CHUNKINGS = {
    "uneven with empty chunks": ((5, 0, 7, 1, 10, 0),),
    "one chunk": ((N,),),
    "many small chunks": ((2,) * 11 + (1,),),
}


def add(a, b):
    return a + b


def newest(new, old):
    """Last wins (scatter's combine): associative, not commutative."""
    return new


def matmul2(a, b):
    """2x2 matrix product on row-major 4-tuples: associative, not commutative."""
    a0, a1, a2, a3 = a
    b0, b1, b2, b3 = b
    return (a0 * b0 + a1 * b2, a0 * b1 + a1 * b3, a2 * b0 + a3 * b2, a2 * b1 + a3 * b3)


def into6(i):
    """Collisions (23 elements into 6 cells), cell 5 never reached, some dropped."""
    if i % 7 == 3:
        return ol.IGNORE
    return i % 5


def into_grid(i, j):
    """Rank 2 into rank 2: (4, 3) cells, some dropped."""
    if (i + j) % 5 == 4:
        return (ol.IGNORE, ol.IGNORE)
    return ((i + 2 * j) % 4, (i * j) % 3)


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
    """``make`` applied to Dask versions of ``arrays`` (chunked ``chunks``, one per array)
    against compute_s of it on the arrays themselves; the Dask result."""
    dasks = [da.from_array(a, chunks=c) for a, c in zip(arrays, chunks, strict=True)]
    y = old.compute(make(*dasks), **kw)
    ys = y if isinstance(y, tuple) else (y,)
    same_bits(tuple(threads(*ys, scheduler=scheduler)), _tuple(ol.compute_s(make(*arrays))))
    return y


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


# --- permute ---------------------------------------------------------------------------

COMBINES = {"add": add, "newest": newest}


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("f", COMBINES.values(), ids=COMBINES.keys())
def test_integer_permutes_equal_compute_s_bit_for_bit(f, chunks):
    # split_every=2: a tree of several levels over the blocks
    y = check(lambda x: ol.permute(f, DEF_I, into6, x), [IN], [chunks], split_every=2)
    assert y.chunks == ((6,),)


def test_the_index_function_sees_global_indices():
    # the identity into a vector of the source's length: each element lands where it is
    chunks = CHUNKINGS["uneven with empty chunks"]
    same = lambda i: i  # noqa: E731
    check(lambda x: ol.permute(add, np.zeros(N, np.int64), same, x), [IN], [chunks])


def test_a_rank_2_source_into_a_rank_2_result_chunked_as_the_defaults():
    src = RNG.integers(-9, 9, (7, 5))
    dflt = RNG.integers(-9, 9, (4, 3))
    chunks = [((3, 0, 4), (2, 3)), ((3, 1), (2, 1))]  # the source cut on both axes
    for f in (add, newest):  # newest: the source is rechunked so blocks keep row-major order
        y = check(lambda x, d: ol.permute(f, d, into_grid, x), [src, dflt], chunks, split_every=2)
        assert y.chunks == chunks[1]


_S = RNG.integers(0, 2, 40)
MATS = [np.ones(40, np.int64), _S, 1 - _S, np.ones(40, np.int64)]
"""The matrices [[1, 1], [0, 1]] and [[1, 0], [1, 1]]: they do not commute."""
IDENTITY = tuple(np.array([1, 0, 0, 1]))


def into3(i):
    return i % 3


def test_a_non_commutative_combine_keeps_the_element_order_across_blocks():
    # The four components come chunked differently: they are aligned to the first's.
    chunkings = [((7, 13, 20),), ((40,),), ((1,) * 40,), ((25, 15),)]
    defaults = tuple(np.full(3, v, np.int64) for v in IDENTITY)

    def op(m):
        return ol.permute(matmul2, defaults, into3, m)

    y = check(lambda *m: op(m), MATS, chunkings, split_every=2)
    # (in any other order the products differ: the check above would have seen it)
    backward = ol.compute_s(op(tuple(m[::-1].copy() for m in MATS)))
    assert all(np.any(a != b) for a, b in zip(threads(*y), backward, strict=True))


def shift(ix, offset):
    return lambda i: ix(i + offset)


def tree_of_block_partials(f, defaults, ix, x, chunks, split_every):
    """The documented bits of a float permute, built from compute_s calls: the first block
    into the defaults, each later one into a partial (from -0.0, neutral for + bit for
    bit: a cell no element reaches stays -0.0 and adds nothing), merged in block order by
    groups of split_every, ``f(later, earlier)``."""
    starts = np.concatenate([[0], np.cumsum(chunks)])
    level = []
    for lo, hi in zip(starts[:-1], starts[1:], strict=True):
        if hi > lo:
            into = defaults if not level else np.full_like(defaults, -0.0)
            level.append(ol.compute_s(ol.permute(f, into, shift(ix, int(lo)), x[lo:hi])))
    while len(level) > 1:
        groups = [level[k : k + split_every] for k in range(0, len(level), split_every)]
        level = []
        for g in groups:
            acc = g[0]
            for later in g[1:]:
                acc = later + acc
            level.append(acc)
    return level[0]


def test_a_float_sum_is_the_documented_tree_the_same_bits_on_every_scheduler():
    chunks = (5, 0, 7, 1, 10, 0)
    x = da.from_array(FN, chunks=(chunks,))
    d = da.from_array(DEF_F, chunks=2)
    ys = [old.compute(ol.permute(add, d, into6, x), split_every=2) for _ in range(2)]
    first = threads(*ys)
    sync = threads(*ys, scheduler="synchronous")
    want = tree_of_block_partials(add, DEF_F, into6, FN, chunks, 2)
    for got in (*first, *sync):
        same_bits(got, want)
    reference = ol.compute_s(ol.permute(add, DEF_F, into6, FN))
    np.testing.assert_allclose(want, reference, rtol=1e-14)  # rounding only
    # one chunk: compute_s's bits for any floats
    check(lambda v: ol.permute(add, DEF_F, into6, v), [FN], [((N,),)])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exactly_representable_float_sums_equal_compute_s(dtype):
    v = RNG.integers(-(2**10), 2**10, N).astype(dtype)
    check(lambda x: ol.permute(add, DEF_I.astype(dtype), into6, x), [v], [((4, 9, 0, 10),)])


@settings(max_examples=10, deadline=None)
@given(
    cuts=st.lists(st.integers(0, N), max_size=6),
    split_every=st.integers(2, 4),
    f=st.sampled_from([add, newest]),
)
def test_any_chunking_and_tree_gives_compute_s_bits_for_integers(cuts, split_every, f):
    bounds = sorted({0, N, *cuts})
    chunks = tuple(b - a for a, b in zip(bounds[:-1], bounds[1:], strict=True))
    # One thread: kernels compiled at once in several threads leave Python's recursion
    # limit raised (offload.emit.recursion), which Hypothesis reports.
    check(
        lambda x: ol.permute(f, DEF_I, into6, x),
        [IN],
        [(chunks,)],
        scheduler="synchronous",
        split_every=split_every,
    )


def test_empty_sources_and_unreached_cells_keep_the_defaults():
    nothing = lambda i: ol.IGNORE  # noqa: E731
    check(lambda x: ol.permute(add, DEF_I, into6, x), [IN[:0]], [((0,),)])
    check(lambda x: ol.permute(add, DEF_I, nothing, x), [IN], [((5, 0, 18),)])
    check(lambda x: ol.permute(add, DEF_I[:0], nothing, x), [IN], [((5, 18),)])
    # a block whose elements all drop, between two that do not
    some = lambda i: ol.IGNORE if 4 < i < 12 else i % 6  # noqa: E731
    check(lambda x: ol.permute(add, DEF_I, some, x), [IN], [((5, 7, 11),)], split_every=3)


def test_element_nodes_around_a_permute_and_target_p():
    # (a permute's source cannot be an element tree over a Dask array: the node's
    # constructor lowers it to check its dtypes, offload.acc.permute)
    def make(x):
        return ol.map(lambda v: v * 3, ol.permute(add, DEF_I, into6, x))

    for target in ("s", "p"):
        check(make, [IN], [((5, 0, 7, 11),)], target=target)


def test_an_index_outside_the_result_raises_naming_the_block():
    x = da.from_array(IN, chunks=5)
    far = lambda i: 7 if i == 12 else i % 6  # noqa: E731
    y = old.compute(ol.permute(add, DEF_I, far, x))
    with pytest.raises(ol.PermuteIndexError, match="outside the result") as err:
        threads(y)
    assert "element (2,) to (7,)" in str(err.value) and "Dask block at (10,)" in str(err.value)


def test_what_cannot_run_is_refused_while_the_graph_is_built():
    def noisy(a, b):
        print(a)
        return a + b

    x = da.from_array(IN, chunks=5)
    with pytest.raises(ol.OffloadError) as err:
        old.compute(ol.permute(noisy, DEF_I, into6, x))
    assert "test_dask_permute_filter.py" in str(err.value) and "print(a)" in str(err.value)
    w = da.from_array(np.array([1, 2, 3]), chunks=2)
    with pytest.raises(old.DaskUnsupported, match="reads the Dask array 'w'"):
        old.compute(ol.permute(add, DEF_I, lambda i: w[0] + i % 3, x))


def into6_rank5(a, b, c, d, e):
    return (a + 2 * b + 3 * c + d * e) % 6


def add5(x, y):
    return x[0] + y[0], x[1] + y[1], x[2] * y[2], x[3] ^ y[3], max(x[4], y[4])


def test_a_permute_of_any_rank_and_any_number_of_components():
    """Its wrappers are written out for the rank and width they serve (no fixed arity)."""
    src = RNG.integers(-9, 9, (3, 2, 4, 2, 3))
    x = da.from_array(src, chunks=(1, 2, 2, 1, 3))
    want = ol.compute_s(ol.permute(add, DEF_I, into6_rank5, src))
    (got,) = threads(old.compute(ol.permute(add, DEF_I, into6_rank5, x)))
    same_bits(got, want)
    parts = tuple(RNG.integers(-9, 9, N) for _ in range(5))
    defaults = tuple(np.zeros(6, np.int64) for _ in range(5))
    want5 = ol.compute_s(ol.permute(add5, defaults, into6, parts))
    xs = tuple(da.from_array(p, chunks=((5, 0, 7, 1, 10, 0),)) for p in parts)
    got5 = threads(*old.compute(ol.permute(add5, defaults, into6, xs)))
    same_bits(tuple(got5), want5)


# --- scatter ---------------------------------------------------------------------------

TO = RNG.integers(0, 6, N)
TO[[3, 9, 20]] = ol.IGNORE


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("data", [IN, FN], ids=["int", "float"])
def test_scatter_equals_compute_s_bit_for_bit(data, chunks):
    defaults = DEF_I.astype(data.dtype)
    # 'to' chunked otherwise: aligned to the source's chunks; the defaults in chunks of 4
    y = check(
        lambda t, x, d: ol.scatter(t, d, x),
        [TO, data, defaults],
        [((11, 12),), chunks, ((4, 2),)],
        split_every=3,
    )
    assert y.chunks == ((4, 2),)


# --- filter ----------------------------------------------------------------------------


def positive(v):
    return v > 0


@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("data", [IN, FN - 0.5], ids=["int", "float"])
def test_filter_equals_compute_s_in_order_with_unknown_chunks(data, chunks):
    y = check(lambda x: ol.filter(positive, x), [data], [chunks])
    assert len(y.chunks[0]) == len(chunks[0]) and all(np.isnan(y.chunks[0]))


def test_filter_blocks_that_keep_nothing_and_empty_results():
    mostly_negative = np.where(np.arange(N) < 15, -1, IN)  # the first blocks keep nothing
    for data in (mostly_negative, -np.abs(IN) - 1, IN[:0]):
        check(
            lambda x: ol.filter(positive, x),
            [data],
            [((5, 0, 7, 1, 10),) if data.size else ((0,),)],
        )


def test_filter_of_a_tuple_a_filter_and_target_p_and_dtype():
    pair = lambda a: a[0] > 0 and a[1] < 0.7  # noqa: E731
    chunks = [((4, 0, 19),)] * 2
    check(lambda x, y: ol.filter(pair, (x, y)), [IN, FN], chunks, target="p")
    check(lambda x: ol.filter(positive, ol.filter(lambda v: v % 3 != 0, x)), [IN], chunks[:1])
    check(lambda x: ol.filter(positive, ol.map(lambda v: v - 100, x)), [IN], chunks[:1])
    x = da.from_array(IN, chunks=chunks[0])
    (got,) = threads(old.compute(ol.filter(positive, x), dtype=np.float32))
    same_bits(got, ol.compute_s(ol.filter(positive, IN), dtype=np.float32))


def test_a_filter_result_read_by_another_node_is_refused_naming_it():
    x = da.from_array(IN, chunks=5)
    kept = ol.filter(positive, x)
    for node, name in [
        (ol.map(lambda v: v * 2, kept), "'map' (Map node)"),
        (ol.fold_all(add, 0, kept), "(Fold node)"),
        (ol.permute(add, DEF_I, into6, kept), "'permute'"),
    ]:
        with pytest.raises(old.DaskUnsupported, match="unknown size") as err:
            old.compute(node)
        assert name in str(err.value)
    with pytest.raises(old.DaskUnsupported, match="chunks= cannot rechunk"):
        old.compute(kept, chunks=4)


# --- all three -------------------------------------------------------------------------


def test_meta_is_given_so_no_kernel_runs_while_the_graph_is_built(monkeypatch):
    from offload.dask import runtime

    ran = []
    monkeypatch.setattr(runtime.Runner, "run", lambda self, node, dtype=None: ran.append(node))
    x = da.from_array(FN, chunks=5)
    t = da.from_array(TO, chunks=5)
    for node, ndim in [
        (ol.permute(add, DEF_F, into6, x), 1),
        (ol.scatter(t, DEF_F, x), 1),
        (ol.filter(positive, x), 1),
        (ol.permute(add, np.zeros((4, 3)), into_grid, da.from_array(FN[:21].reshape(7, 3))), 2),
    ]:
        y = old.compute(node)
        assert isinstance(y._meta, np.ndarray) and y._meta.dtype == np.float64
        assert y._meta.ndim == ndim
    assert ran == []


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_local_cluster_of_two_processes_gives_the_same_bits(cluster_client):
    chunks = ((5, 0, 7, 1, 10, 0),)
    x = da.from_array(FN, chunks=chunks)
    xi = da.from_array(IN, chunks=chunks)
    ys = [
        old.compute(ol.permute(add, DEF_F, lambda i: into6(i), x), split_every=2),  # by value
        old.compute(ol.scatter(da.from_array(TO, chunks=7), DEF_I, xi)),
        old.compute(ol.filter(positive, xi)),
    ]
    got = cluster_client.compute(ys, sync=True)
    local = threads(*ys)
    for g, w in zip(got, local, strict=True):
        assert g.tobytes() == w.tobytes()
    same_bits(got[0], tree_of_block_partials(add, DEF_F, into6, FN, chunks[0], 2))
    same_bits(got[1], ol.compute_s(ol.scatter(TO, DEF_I, IN)))
    same_bits(got[2], ol.compute_s(ol.filter(positive, IN)))
    workers = cluster_client.run(lambda: sys.modules["os"].getpid())
    assert len(set(workers.values())) == 2


def _simulator_on():
    import os

    import numba

    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and bool(numba.config.ENABLE_CUDASIM)


@pytest.mark.sim
@pytest.mark.skipif(not _simulator_on(), reason="sim lane: NUMBA_ENABLE_CUDASIM=1 -m sim")
def test_target_g_in_the_simulator(monkeypatch):
    monkeypatch.setattr(ol.config, "gpu_simulator", True)
    chunks = ((5, 0, 7, 11),)
    x = da.from_array(IN, chunks=chunks)
    ys = [
        old.compute(ol.permute(newest, DEF_I, into6, x), target="g", split_every=2),
        old.compute(ol.scatter(da.from_array(TO, chunks=chunks), DEF_I, x), target="g"),
        old.compute(ol.filter(positive, x), target="g"),
    ]
    # The simulator runs a kernel's threads as Python threads: one kernel at a time.
    got = threads(*ys, scheduler="synchronous")
    want = (
        ol.compute_s(ol.permute(newest, DEF_I, into6, IN)),
        ol.compute_s(ol.scatter(TO, DEF_I, IN)),
        ol.compute_s(ol.filter(positive, IN)),
    )
    same_bits(tuple(got), want)
