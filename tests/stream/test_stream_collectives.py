"""Streamed collectives (offload.stream.collectives) under numba's simulator: ``compute_g`` of
``fold_all``/``fold`` over host inputs larger than a small ``device_memory_limit`` runs in
chunks, each reduced on the device into the partials of the unstreamed reduction tree, and
gives the unstreamed ``compute_g``'s bits (whatever the chunking); trees that streaming
does not cover are a clear error over the limit and run unstreamed under it."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import offload as ol
import offload.stream as stream
from offload import driver
from offload.acc.base import Context
from offload.acc.plan import stages
from offload.stream import collectives
from offload.stream.execute import run_gpu
from offload.stream.progress import Progress
from tests.acc.skeleton_refs import matmul2
from tests.stream import fake_cupy
from tests.stream.collective_helpers import bits, sim_or_gpu  # noqa: F401 (fixture)

sim = pytest.mark.sim
gpu = pytest.mark.gpu

RNG = np.random.default_rng(21)
X200 = RNG.standard_normal(200).astype(np.float32)
X4097 = RNG.standard_normal(4097).astype(np.float32)
Y1000 = RNG.standard_normal(1000).astype(np.float32)
Z1000 = RNG.standard_normal(1000).astype(np.float32)
M = RNG.standard_normal((30, 100)).astype(np.float32)
M_SHORT = RNG.standard_normal((30, 40)).astype(np.float32)
I32 = RNG.integers(2**29, 2**30, 300).astype(np.int32)  # (their int32 sum wraps)
WITH_NAN = RNG.standard_normal(400)
WITH_NAN[[37, 250]] = np.nan  # (max keeps the first NaN it meets: the order shows)


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def biggest(a, b):
    return max(a, b)


def scaled(v):
    return v * np.float32(1.5) - np.float32(0.25)


@pytest.fixture
def streamed_folds(monkeypatch):
    """The folds ``compute_g`` streamed (``collectives.run`` calls)."""
    calls: list[object] = []
    real = collectives.run

    def spy(sf, dtype=None, rows=None):
        calls.append(sf.fold)
        return real(sf, dtype, rows)

    monkeypatch.setattr(collectives, "run", spy)
    return calls


def _streamed_equals_unstreamed(tree, limit, streamed_folds, *, chunks=3):
    """``compute_g(tree)`` under ``limit`` is streamed in at least ``chunks`` chunks and
    has the unstreamed call's dtypes and bits; returns the streamed result."""
    want = ol.compute_g(tree)
    ol.config.device_memory_limit = limit
    assert len(stream.plan(tree).chunks) >= chunks
    got = ol.compute_g(tree)
    assert streamed_folds == [tree]
    assert isinstance(got, tuple) or type(got) is np.ndarray
    assert bits(got) == bits(want)
    return got


@sim
@pytest.mark.parametrize(
    ("x", "limit"),
    [(X200[:40], 120), (X200, 600), (X4097, 12000)],
    ids=["no-stage", "one-stage", "two-stages"],
)
def test_a_streamed_float32_sum_has_the_unstreamedbits(x, limit, streamed_folds):
    tree = ol.fold_all(add, 0.0, ol.map(scaled, x))
    got = _streamed_equals_unstreamed(tree, limit, streamed_folds)
    assert got.shape == () and got.dtype == np.float32


@sim
def test_the_bits_check_tells_summation_orders_apart():
    """The inputs are such that a sum in another order (chunk sums, then their sum) has
    other bits: the equality above is not a coincidence of exact sums."""
    ol.config.device_memory_limit = 12000
    tree = ol.fold_all(add, 0.0, ol.map(scaled, X4097))
    plan = stream.plan(tree)
    values = ol.compute_s(X4097.shape, lambda i: scaled(X4097[i]))
    other = np.float32(0.0)
    for chunk in plan.chunks:
        (lo, hi), *_ = chunk.block
        part = np.float32(0.0)
        for v in values[lo:hi]:
            part = np.float32(part + v)
        other = np.float32(other + part)
    assert other.tobytes() != np.asarray(ol.compute_g(tree)).tobytes()


@sim
@pytest.mark.parametrize("rows", [1, 3, 7, 64, 200])
def test_every_chunking_of_a_sum_gives_the_samebits(rows):
    tree = ol.fold_all(add, 0.0, ol.map(scaled, X200))
    want = np.asarray(ol.compute_g(tree)).tobytes()
    assert stream.compute_g(tree, rows=rows).tobytes() == want


@sim
def test_a_chunking_of_a_two_stage_sum_gives_the_samebits():
    tree = ol.fold_all(add, 0.0, X4097)
    assert len(stages(1, 4097, wide=True, commutes=True)) == 2
    want = np.asarray(ol.compute_g(tree)).tobytes()
    assert stream.compute_g(tree, rows=1000).tobytes() == want


@sim
def test_a_streamed_int32_sum_wraps_as_the_unstreamed_one(streamed_folds):
    tree = ol.fold_all(add, 0, I32)
    got = _streamed_equals_unstreamed(tree, 900, streamed_folds)
    assert got.dtype == np.int32
    assert int(got) != int(I32.astype(np.int64).sum())  # (it wrapped)


@sim
def test_a_streamed_int64_sum_of_a_map(streamed_folds):
    tree = ol.fold_all(add, 0, ol.map(lambda v: v * 3 - 7, I32.astype(np.int64)))
    got = _streamed_equals_unstreamed(tree, 1800, streamed_folds)
    assert int(got) == int((I32.astype(np.int64) * 3 - 7).sum())


@sim
def test_a_streamed_max_keeps_the_contiguous_tree_and_its_first_nan(streamed_folds):
    tree = ol.fold_all(biggest, -np.inf, ol.map(lambda v: v * 2.0, WITH_NAN))
    (first,) = stages(1, WITH_NAN.size, wide=True, commutes=False)
    assert not first.strided  # (max does not commute: runs of c consecutive elements)
    _streamed_equals_unstreamed(tree, 2400, streamed_folds)
    plan = stream.plan(tree)
    starts = [c.block[0][0] for c in plan.chunks]
    assert all(lo % first.c == 0 for lo in starts)  # (no partial straddles two chunks)


@sim
def test_a_streamed_max_without_nan(streamed_folds):
    tree = ol.fold_all(biggest, -np.inf, ol.map(scaled, X200))
    got = _streamed_equals_unstreamed(tree, 600, streamed_folds)
    assert got == scaled(X200).max()


@sim
def test_a_streamed_dot_product_fuses_nothing_away(streamed_folds):
    tree = ol.fold_all(add, 0, ol.zip_with(mul, Y1000, Z1000))
    _streamed_equals_unstreamed(tree, 6000, streamed_folds)


@sim
def test_a_streamed_fold_all_of_a_matrix_cuts_its_rows(streamed_folds):
    tree = ol.fold_all(add, 0.0, ol.map(scaled, M))
    _streamed_equals_unstreamed(tree, 9000, streamed_folds)
    assert all(c.block[1:] == ((0, 100),) for c in stream.plan(tree).chunks)


@sim
@pytest.mark.parametrize(("f", "z"), [(add, 0.0), (biggest, -np.inf)], ids=["sum", "max"])
def test_a_streamed_fold_of_rows(f, z, streamed_folds):
    tree = ol.fold(f, z, ol.map(scaled, M))
    assert stages(30, 100, wide=True, commutes=f is add)  # (a tree: partials per row)
    got = _streamed_equals_unstreamed(tree, 9000, streamed_folds, chunks=2)
    assert got.shape == (30,)


@sim
def test_a_streamed_fold_of_short_rows_without_a_tree(streamed_folds):
    tree = ol.fold(add, 0.0, M_SHORT)
    assert not stages(30, 40, wide=True, commutes=True)
    _streamed_equals_unstreamed(tree, 3000, streamed_folds, chunks=2)


FOLD1S = {  # (no neutral element: each partial starts from its first element)
    "sum-two-stages": (lambda: ol.fold1(add, ol.map(scaled, X4097)), 12000),
    "max-first-nan": (lambda: ol.fold1(biggest, ol.map(lambda v: v * 2.0, WITH_NAN)), 2400),
    "no-stage": (lambda: ol.fold1(add, X200[:40]), 120),
    "rows": (lambda: ol.fold1(add, ol.map(scaled, M)), 9000),
    "short-rows": (lambda: ol.fold1(biggest, M_SHORT), 3000),
}


@sim
@pytest.mark.parametrize("case", FOLD1S.values(), ids=FOLD1S.keys())
def test_a_streamed_fold1_has_the_unstreamed_bits(case, streamed_folds):
    make, limit = case
    tree = make()
    _streamed_equals_unstreamed(tree, limit, streamed_folds, chunks=2)


@sim
def test_a_streamed_fold1_of_an_empty_axis_is_the_unstreamed_error():
    with pytest.raises(ValueError, match="fold1 of an empty axis"):
        stream.compute_g(ol.fold1(add, X200[:0]), rows=3)


@sim
def test_a_streamed_fold_of_rows_of_tuples(streamed_folds):
    def sum_and_max(a, b):
        return a[0] + b[0], max(a[1], b[1])

    tree = ol.fold(sum_and_max, (0.0, -np.inf), (M, ol.map(scaled, M)))
    got = _streamed_equals_unstreamed(tree, 10000, streamed_folds)
    assert isinstance(got, tuple) and len(got) == 2


N = 1000


def smoothed(i):
    if 0 < i < N - 1:
        return Y1000[i - 1] + np.float32(2.0) * Y1000[i] + Y1000[i + 1]
    return Y1000[i]


@sim
def test_a_streamed_fold_of_a_producer_with_a_halo(streamed_folds):
    tree = ol.fold_all(add, 0.0, ol.from_function(N, smoothed))
    _streamed_equals_unstreamed(tree, 3000, streamed_folds)
    plan = stream.plan(tree)
    (k,) = plan.streamed
    middle = plan.chunks[1]
    (lo, hi), *_ = middle.block
    assert middle.windows[k] == ((lo - 1, hi + 1),)  # (one halo row on each side)


@sim
def test_a_fold_within_the_limit_is_not_streamed(streamed_folds):
    want = np.asarray(ol.compute_g(ol.fold_all(add, 0.0, X200))).tobytes()
    ol.config.device_memory_limit = 1 << 20
    got = ol.compute_g(ol.fold_all(add, 0.0, X200))
    assert streamed_folds == [] and np.asarray(got).tobytes() == want


def add5(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4])


def _scan(x):
    return ol.scanl(add, 0.0, x)


def _shared(node):
    return ol.zip_with(add, node, node)


R4 = X200.reshape(5, 4, 5, 2)


def to_row(i, j, k, m):
    return (i,)


def _permute4():
    return ol.permute(add, np.zeros(5, np.float32), to_row, R4)


def one():
    return 1


UNSUPPORTED = {
    "permute-of-a-0-d-source": (
        lambda: ol.permute(add, np.zeros(100), one, np.array(2.0)),
        "the permute's source is 0-d",
    ),
    "map-of-a-permute-of-a-0-d-source": (
        lambda: ol.map(scaled, ol.permute(add, np.zeros(100), one, np.array(2.0))),
        "the permute's source is 0-d",
    ),
}

PART_BY_PART = {  # (offload.stream.composite; more in test_stream_composite.py)
    "map-of-a-permute-of-rank-4": lambda: ol.map(scaled, _permute4()),
    "map-of-a-scan": lambda: ol.map(scaled, _scan(M)),
    "fold-of-a-scan": lambda: ol.fold_all(add, 0.0, _scan(M)),
    "map-of-a-fold": lambda: ol.map(scaled, ol.fold(add, 0.0, M)),
    "shared-work": lambda: ol.fold(add, 0.0, _shared(ol.map(scaled, M))),
}


@sim
@pytest.mark.parametrize("make", PART_BY_PART.values(), ids=PART_BY_PART.keys())
def test_a_tree_of_several_parts_streams_part_by_part_over_the_limit(make):
    want = np.asarray(ol.compute_g(make())).tobytes()
    ol.config.device_memory_limit = 4000  # (M: 12000 bytes; X200: 800)
    assert np.asarray(ol.compute_g(make())).tobytes() == want


@sim
@pytest.mark.parametrize("case", UNSUPPORTED.values(), ids=UNSUPPORTED.keys())
def test_a_tree_streaming_does_not_cover_is_a_clear_error_over_the_limit(case):
    make, why = case
    ol.config.device_memory_limit = 500
    with pytest.raises(collectives.StreamUnsupported) as err:
        ol.compute_g(make())
    text = str(err.value)
    assert "streaming does not cover this tree" in text and why in text
    assert "exceed ol.config.device_memory_limit (500 bytes)" in text
    assert "hint: streaming covers compute_g of fold, fold1 and fold_all" in text
    with pytest.raises(collectives.StreamUnsupported):
        stream.compute_g(make())


@sim
def test_a_tree_streaming_does_not_cover_runs_unstreamed_within_the_limit():
    want = np.asarray(ol.compute_g(ol.map(scaled, _scan(X200)))).tobytes()
    ol.config.device_memory_limit = 1 << 20
    assert np.asarray(ol.compute_g(ol.map(scaled, _scan(X200)))).tobytes() == want


def _refused(ctx, root, dtype, out):
    raise MemoryError("the GPU has no room")


def _gpu_context():
    options = ol.config.compile_options()
    backend = stream.device.stream_backend()
    return Context(backend, options, ol.config.determinism, run=driver.run)


@sim
def test_a_fold_refused_with_memory_error_is_streamed_in_the_free_memory(streamed_folds):
    tree = ol.fold_all(add, 0.0, ol.map(scaled, X200))
    want = np.asarray(ol.compute_g(tree)).tobytes()
    got = stream.compute_tree(_gpu_context(), tree, None, _refused)
    assert streamed_folds == [tree] and got.tobytes() == want


@sim
def test_a_tree_refused_with_memory_error_is_computed_part_by_part():
    tree = ol.map(scaled, _scan(X200))
    want = np.asarray(ol.compute_g(tree)).tobytes()
    assert stream.compute_tree(_gpu_context(), tree, None, _refused).tobytes() == want


@sim
def test_a_tree_refused_with_memory_error_that_cannot_stream_raises_it(monkeypatch):
    monkeypatch.setattr(stream, "device_budget", lambda name: 500)  # (the free memory)
    with pytest.raises(MemoryError, match="no room"):
        stream.compute_tree(
            _gpu_context(), UNSUPPORTED["map-of-a-permute-of-a-0-d-source"][0](), None, _refused
        )


# The GPU's pipeline over the stand-in CuPy (tests/stream/fake_cupy.py): the carry's
# kernels are queued on the chunks' streams after the producer's, and a strided stage's
# kernel waits for the previous chunk's (``wait_event``: recorded here, since the stand-in
# runs the streams' work in chunk order anyway).


class _DeferredCarry(collectives.Carry):
    def launch(self, flats, first, acc, out):
        queue = fake_cupy.Stream.current.queue
        run = super().launch

        def host(arrays):
            return [np.asarray(a) for a in arrays]

        queue.append(lambda: run(host(flats), first, None if acc is None else host(acc), host(out)))


@pytest.fixture
def fake_cp(monkeypatch):
    """The stand-in CuPy with the current stream, events that know their stream, and
    ``wait_event`` (the waits are in ``.waits``: (waiting stream, event's stream))."""
    waits: list[tuple[int, int]] = []
    record = fake_cupy.Stream.record

    def tagged_record(self):
        event = record(self)
        event.stream = self.ptr
        return event

    def wait_event(self, event):
        waits.append((self.ptr, event.stream))
        self.queue.append(event.synchronize)

    monkeypatch.setattr(fake_cupy.Stream, "record", tagged_record)
    monkeypatch.setattr(fake_cupy.Stream, "wait_event", wait_event, raising=False)
    current = SimpleNamespace(get_current_stream=lambda: fake_cupy.Stream.current)
    cuda = SimpleNamespace(**vars(fake_cupy.cp.cuda), **vars(current))
    yield SimpleNamespace(**{**vars(fake_cupy.cp), "cuda": cuda, "waits": waits})
    stream.release()  # (the fake's "pinned" block is host memory: not for a real run)


def _pipeline(fake_cp, sf, call, p, slots):
    """The prepared streamed fold ``p`` through the GPU pipeline on the stand-in CuPy with
    ``slots`` streams: its carry, holding the first stage's partials."""
    carry = _DeferredCarry.of(sf, call, p, fake_cp)
    run_gpu(
        fake_cp,
        fake_cupy.Deferred(p.kernel),
        p.backend,
        p.wf,
        p.plan,
        p.values,
        p.extents,
        p.shape,
        p.dtypes,
        slots,
        Progress(len(p.plan.chunks), False),
        carry,
    )
    return carry


@sim
@pytest.mark.parametrize("slots", [1, 2, 3])
@pytest.mark.parametrize(
    ("f", "z", "x", "rows"),
    [(add, 0.0, X200, 8), (biggest, -np.inf, WITH_NAN, 58)],
    ids=["strided-sum", "contiguous-max"],
)
def test_the_gpu_pipeline_carries_the_partials_in_chunk_order(fake_cp, slots, f, z, x, rows):
    tree = ol.fold_all(f, z, ol.map(lambda v: v * 2.0, x))
    want = np.asarray(ol.compute_g(tree)).tobytes()
    sf = collectives.recognise(tree)
    call = collectives.streamed_call(sf)
    p = stream.prepare(call.target, call.shape, rows=rows, cut=call.cut)
    chunks = len(p.plan.chunks)
    assert chunks > slots
    carry = _pipeline(fake_cp, sf, call, p, slots)
    got = collectives.finish_whole(sf, call, np.asarray(carry.current), None)
    assert got.tobytes() == want
    if call.first.strided:  # chunk k waits on the stream chunk k - 1 ran on
        assert len(fake_cp.waits) == chunks - 1
        waiters = [w for w, _ in fake_cp.waits]
        assert [e for _, e in fake_cp.waits[1:]] == waiters[:-1]
        assert len(set(waiters)) == slots
    else:  # (contiguous partials are independent)
        assert fake_cp.waits == []


@sim
def test_a_fold_keeps_the_same_bits_from_run_to_run():
    tree = ol.fold_all(add, 0.0, ol.map(scaled, X200))
    ol.config.device_memory_limit = 600
    runs = {stream.compute_g(tree).tobytes() for _ in range(3)}
    assert len(runs) == 1


@sim
def test_the_chunks_of_a_strided_fold_hold_every_partial_in_the_first():
    tree = ol.fold_all(add, 0.0, X4097)
    (first, _) = stages(1, 4097, wide=True, commutes=True)
    plan = stream.plan(tree, rows=1)
    (lo, hi), *_ = plan.chunks[0].block
    assert (lo, hi - lo) == (0, first.p)


@sim
def test_a_streamed_fold_takes_dtype(streamed_folds):
    tree = ol.fold_all(add, 0.0, ol.map(scaled, X200))
    want = ol.compute_g(tree, dtype=np.float64)
    ol.config.device_memory_limit = 600
    got = ol.compute_g(tree, dtype=np.float64)
    assert streamed_folds == [tree] and bits(got) == bits(want)


def pair_add(a, b):
    return a[0] + b[0], a[1] + b[1]


def squared(v):
    return v * v


def first_largest(a, b):
    """(value, index) of the first largest value: associative, does not commute."""
    return a if a[0] >= b[0] else b


def six_first_largest(a, b):
    """Six components; does not commute (the contiguous tree)."""
    return a if a[0] >= b[0] else b


PICK = np.array([[1, 1, 0, 1], [1, 0, 1, 1], [0, 1, 1, 0], [2, 1, 1, 1]])
MATS = tuple(np.ascontiguousarray(PICK[RNG.integers(0, 4, 600)][:, k]) for k in range(4))

TUPLE_FOLDS = {
    "pair-strided-no-stage": (
        lambda: ol.fold_all(pair_add, (0.0, 0.0), (X200[:40],) * 2),
        120,
    ),
    "pair-strided": (
        lambda: ol.fold_all(pair_add, (0.0, 0.0), (X200, ol.map(squared, X200))),
        1200,
    ),
    "pair-strided-two-stages": (
        lambda: ol.fold_all(pair_add, (0.0, 0.0), (ol.map(scaled, X4097), X4097)),
        12000,
    ),
    "argmax-contiguous": (
        lambda: ol.fold_all(first_largest, (-np.inf, -1), (WITH_NAN, np.arange(400))),
        4000,
    ),
    "mat2-of-4": (lambda: ol.fold_all(matmul2, (1, 0, 0, 1), MATS), 8000),
    "five-strided": (lambda: ol.fold_all(add5, (0.0,) * 5, (X200,) * 5), 2000),
    "six-contiguous": (
        lambda: ol.fold_all(
            six_first_largest, (-np.inf, -1, 0, 0, 1, 2), (WITH_NAN, *(np.arange(400),) * 5)
        ),
        12000,
    ),
}


@sim
@pytest.mark.parametrize(("make", "limit"), TUPLE_FOLDS.values(), ids=TUPLE_FOLDS.keys())
def test_a_streamed_fold_all_of_tuples_has_the_unstreamed_bits(make, limit, streamed_folds):
    got = _streamed_equals_unstreamed(make(), limit, streamed_folds)
    assert isinstance(got, tuple) and all(g.shape == () for g in got)


@sim
@pytest.mark.parametrize("rows", [8, 37])
def test_the_gpu_pipeline_carries_tuple_partials_in_chunk_order(fake_cp, rows):
    tree = ol.fold_all(pair_add, (0.0, 0.0), (ol.map(scaled, X200), X200))
    want = bits(ol.compute_g(tree))
    sf = collectives.recognise(tree)
    call = collectives.streamed_call(sf)
    p = stream.prepare(call.target, call.shape, rows=rows, cut=call.cut)
    assert call.first.strided and len(p.plan.chunks) > 2
    carry = _pipeline(fake_cp, sf, call, p, 2)
    partials = tuple(np.asarray(c) for c in carry.current)
    assert bits(collectives.finish_whole(sf, call, partials, None)) == want
    assert len(fake_cp.waits) == len(p.plan.chunks) - 1


# On a real GPU (the ``gpu`` lane): the pipeline's three streams, the carry's kernels on
# them in chunk order, the partials finished on the device.

BIG = RNG.standard_normal(1 << 22).astype(np.float32)
BIG2 = RNG.standard_normal(1 << 22).astype(np.float32)
ROWS = RNG.standard_normal((1 << 14, 256)).astype(np.float32)  # (wide: one stage per row)

ON_THE_GPU = {
    "sum": lambda: ol.fold_all(add, 0.0, BIG),
    "dot": lambda: ol.fold_all(add, 0, ol.zip_with(mul, BIG, BIG2)),
    "max": lambda: ol.fold_all(biggest, -np.inf, ol.map(scaled, BIG)),
    "rows": lambda: ol.fold(add, 0.0, ol.map(scaled, ROWS)),
}


@gpu
@pytest.mark.parametrize("make", ON_THE_GPU.values(), ids=ON_THE_GPU.keys())
def test_a_streamed_fold_on_the_gpu_has_the_unstreamedbits(make, streamed_folds):
    tree = make()
    try:
        _streamed_equals_unstreamed(tree, 8 << 20, streamed_folds, chunks=4)
        runs = {np.asarray(stream.compute_g(tree)).tobytes() for _ in range(2)}
        assert len(runs) == 1
    finally:
        stream.release()
