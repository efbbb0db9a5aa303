"""compute_g streamed under numba's simulator: a small ``device_memory_limit`` forces chunks,
and the result equals the unstreamed one bit for bit (the simulator runs the GPU's chunk and
halo logic: ``offload.stream.execute.run_host`` launches the same windowed kernel)."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
import offload.stream as stream
from offload.stream.plan import DoesNotFit

pytestmark = pytest.mark.sim

RNG = np.random.default_rng(3)
X = RNG.random(40)
M = RNG.random((18, 5)).astype(np.float32)
P = RNG.integers(0, 40, 40)
N = 40


@pytest.fixture(autouse=True)
def _simulator_with_small_budget():
    saved = (ol.config.gpu_simulator, ol.config.device_memory_limit)
    ol.config.gpu_simulator = True
    ol.config.device_memory_limit = 300
    yield
    ol.config.gpu_simulator, ol.config.device_memory_limit = saved


@pytest.fixture
def streamed_calls(monkeypatch):
    """How many times compute_g took the streamed path."""
    calls: list[tuple[int, ...]] = []
    real = stream.run

    def spy(target, shape, dtype=None, **kw):
        calls.append(shape)
        return real(target, shape, dtype, **kw)

    monkeypatch.setattr(stream, "run", spy)
    return calls


def stencil(i):
    if 0 < i < N - 1:
        return X[i - 1] + 2.0 * X[i] + X[i + 1]
    return X[i]


def rows2d(i, j):
    up = M[i - 1, j] if i > 0 else np.float32(0.0)
    return up + M[i, j] * M[i, (j + 1) % 5], i - j


def test_a_streamed_stencil_equals_the_unstreamed_one_bit_for_bit(streamed_calls):
    assert len(stream.plan(N, stencil).chunks) > 2
    got = ol.compute_g(N, stencil)
    assert streamed_calls == [(N,)]
    ol.config.device_memory_limit = None
    want = ol.compute_g(N, stencil)
    assert got.tobytes() == want.tobytes()
    assert got.tobytes() == ol.compute_s(N, stencil).tobytes()


def test_a_streamed_2d_function_with_offset_reads_and_two_results(streamed_calls):
    got = ol.compute_g((18, 5), rows2d)
    assert streamed_calls == [(18, 5)]
    want = ol.compute_s((18, 5), rows2d)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.tobytes() == w.tobytes()


def test_a_delayed_tree_streams_too(streamed_calls):
    tree = ol.map(lambda v: v * 3.0 + 1.0, ol.from_function(N, stencil))
    got = ol.compute_g(tree)
    assert streamed_calls == [(N,)]
    assert got.tobytes() == ol.compute_s(tree).tobytes()


def test_forced_rows_give_the_same_bits():
    want = ol.compute_s(N, stencil)
    for rows in (1, 3, 7, 40):
        assert stream.compute_g(N, stencil, rows=rows).tobytes() == want.tobytes()


def test_data_within_the_limit_is_not_streamed(streamed_calls):
    ol.config.device_memory_limit = 1 << 20
    ol.compute_g(N, stencil)
    assert streamed_calls == []


def test_a_gathered_array_fitting_whole_is_sent_whole(streamed_calls):
    ol.config.device_memory_limit = 900  # X (320 B) resident, P and the result in chunks

    def gathered(i):
        return X[P[i]] * 2.0

    got = ol.compute_g(N, gathered)
    assert streamed_calls == [(N,)]
    assert got.tobytes() == ol.compute_s(N, gathered).tobytes()


def test_a_gathered_array_over_the_budget_is_a_located_error():
    def gathered(i):
        return X[P[i]] * 2.0

    with pytest.raises(DoesNotFit) as err:
        ol.compute_g(N, gathered)
    text = str(err.value)
    assert "test_stream_sim.py" in text and "X[P[i]]" in text
    assert "not bounded by the chunk's rows" in text


def test_a_strided_input_streams_through_its_windows(streamed_calls):
    xs = X[::2]

    def every_other(i):
        return xs[i] - xs[i - 1] if i > 0 else xs[i]

    got = ol.compute_g(N // 2, every_other)
    assert streamed_calls == [(N // 2,)]
    assert got.tobytes() == ol.compute_s(N // 2, every_other).tobytes()


def test_the_progress_line_counts_chunks_on_stderr(monkeypatch, capsys):
    monkeypatch.setitem(__import__("sys").modules, "tqdm", None)  # the plain line
    monkeypatch.setattr(ol.config, "progress", True)
    chunks = len(stream.plan(N, stencil).chunks)
    stream.compute_g(N, stencil)
    err = capsys.readouterr().err
    assert f"{chunks}/{chunks} chunks" in err and err.endswith("\n")


def test_a_streamed_call_with_dtype(streamed_calls):
    got = ol.compute_g(N, stencil, dtype=np.float32)
    assert streamed_calls == [(N,)] and got.dtype == np.float32
    assert got.tobytes() == ol.compute_s(N, stencil, dtype=np.float32).tobytes()


def test_a_streamed_call_writes_into_host_out_arrays(streamed_calls):
    out = np.full(N, np.nan)
    assert ol.compute_g(N, stencil, out=out) is out
    assert streamed_calls == [(N,)]
    assert out.tobytes() == ol.compute_s(N, stencil).tobytes()
    s, d = np.empty((18, 5), np.float32), np.empty((18, 5), np.int64)
    got = ol.compute_g((18, 5), rows2d, out=(s, d))
    assert got[0] is s and got[1] is d
    for g, w in zip((s, d), ol.compute_s((18, 5), rows2d), strict=True):
        assert g.tobytes() == w.tobytes()


def test_a_streamed_out_that_is_its_own_input_gets_the_inputs_as_they_were(streamed_calls):
    """``out=x`` with a stencil over ``x``: later chunks' halos must read the old rows."""
    want = ol.compute_s(N, stencil)
    saved = X.copy()
    try:
        assert ol.compute_g(N, stencil, out=X) is X
        assert streamed_calls == [(N,)]
        assert X.tobytes() == want.tobytes()
    finally:
        X[:] = saved


def test_a_streamed_out_follows_numpys_rules(streamed_calls):
    """Cast under ``same_kind`` (float64 into float32), any layout; a wrong kind, shape or
    a read-only array is refused before any chunk runs, the array untouched."""
    f32 = np.full(N, np.nan, np.float32)
    ol.compute_g(N, stencil, out=f32)
    assert f32.tobytes() == ol.compute_s(N, stencil, dtype=np.float32).tobytes()
    strided = np.full((N, 2), np.nan)[:, 0]
    ol.compute_g(N, stencil, out=strided)
    assert strided.tobytes() == ol.compute_s(N, stencil).tobytes()
    assert streamed_calls == [(N,), (N,)]
    ints = np.full(N, 7, np.int64)
    with pytest.raises(TypeError, match="same_kind"):
        ol.compute_g(N, stencil, out=ints)
    with pytest.raises(ValueError, match="shape"):
        ol.compute_g(N, stencil, out=np.empty(N + 1))
    locked = np.zeros(N)
    locked.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        ol.compute_g(N, stencil, out=locked)
    assert (ints == 7).all() and (locked == 0).all()
    with pytest.raises(TypeError, match="host NumPy"):
        stream.compute_g(N, stencil, out=[np.empty(N)])


def test_a_streamed_fold_combines_chunk_partials_in_the_dask_tree():
    fold = stream.SequentialFold(lambda a, b: a + b, 0.0)
    got = stream.fold_all(N, stencil, fold=fold, rows=3)
    values = ol.compute_s(N, stencil)
    partials = [fold.partial(values[k : k + 3]) for k in range(0, N, 3)]
    assert got == stream.combine_tree(fold, partials)
    da = pytest.importorskip("dask.array")
    old = pytest.importorskip("offload.dask")
    same_tree = old.fold_all(da.from_array(values, chunks=3), fold).compute(scheduler="sync")
    assert got == same_tree


def _doubler(x):
    def doubled(i):
        return x[i] * 2

    return doubled


def test_the_streaming_decision_sizes_this_calls_result(streamed_calls):
    # The first call's int8 result fits; the same code over float64 does not: the bytes
    # are those of this call's result type, not of the first lowering's.
    ol.config.device_memory_limit = 10_000
    ol.compute_g(100, _doubler(np.zeros(100, np.int8)))
    assert streamed_calls == []
    ol.config.device_memory_limit = 1000  # 800 B in + 800 B out
    got = ol.compute_g(100, _doubler(np.ones(100)))
    assert streamed_calls == [(100,)]
    assert np.asarray(got).tolist() == [2.0] * 100


def test_a_streamed_bounds_fault_names_the_results_element():
    x = np.arange(40, dtype=np.float64)

    def past_the_end(i):
        return x[i + 1]

    ol.config.bounds_check = True
    try:
        ol.config.device_memory_limit = None
        with pytest.raises(IndexError, match=r"element \(39,\)"):
            ol.compute_g(40, past_the_end)
        with pytest.raises(IndexError, match=r"element \(39,\)"):
            stream.compute_g(40, past_the_end, rows=6)
    finally:
        ol.config.bounds_check = False
