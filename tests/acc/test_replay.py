"""The replay lane (``offload.replay``): a warm call of a fold/stencil tree runs its
recorded steps, with the same bits as the scheduled path, and never a stale value -- new
array contents, a rebound captured array or number, another neutral element, another
aliasing between the inputs, another shape all give what the scheduled path gives.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import offload as ol
from offload import driver, replay
from offload.acc.base import Context
from offload.acc.graph import compute as compute_graph
from offload.acc.permute import IGNORE, permute, scatter
from offload.config import config
from offload.frontend.nodes import delayed_key
from offload.targets import PAR, SEQ

pytestmark = pytest.mark.cpu

HERE = sys.modules[__name__]

RNG = np.random.default_rng(7)
N = 3 * 8192 + 5
"""Long enough for a CPU fold in stages (``plan.CPU_CHUNK``)."""


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


SCALE = 2.0
W = np.arange(N, dtype=np.float32)


def scaled(v):
    return v * SCALE


def weighted_at(i):
    return W[i] * 0.5


@pytest.fixture(params=["deterministic", "cross_target"])
def mode(request, monkeypatch):
    monkeypatch.setattr(config, "determinism", request.param)
    return request.param


@pytest.fixture
def runs(monkeypatch):
    """Counts the plans run and the schedules recorded."""
    seen = {"replayed": 0, "scheduled": 0}
    real_run, real_graph = replay.Plan.run, replay.compute_graph

    def counted_run(self, values):
        seen["replayed"] += 1
        return real_run(self, values)

    def counted_graph(*args):
        seen["scheduled"] += 1
        return real_graph(*args)

    monkeypatch.setattr(replay.Plan, "run", counted_run)
    monkeypatch.setattr(replay, "compute_graph", counted_graph)
    return seen


def scheduled(compute, node):
    """``node`` by the scheduled path alone (the reference)."""
    target = SEQ if compute is ol.compute_s else PAR
    options = config.compile_options()
    ctx = Context(target.resolve(options), options, config.determinism, run=driver.run)
    return compute_graph(ctx, node, None, None)


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


COMPUTES = [ol.compute_s, ol.compute_p]


@pytest.mark.parametrize("compute", COMPUTES, ids=["s", "p"])
def test_a_warm_dotp_replays_with_the_scheduled_bits(compute, mode, runs):
    x, y = (RNG.random(N, dtype=np.float32) for _ in range(2))
    first = compute(ol.fold_all(add, 0.0, ol.zip_with(mul, x, y)))
    assert runs == {"replayed": 0, "scheduled": 1}
    for _ in range(2):
        x2, y2 = (RNG.random(N, dtype=np.float32) for _ in range(2))
        got = compute(ol.fold_all(add, 0.0, ol.zip_with(mul, x2, y2)))
        same_bits(got, scheduled(compute, ol.fold_all(add, 0.0, ol.zip_with(mul, x2, y2))))
    assert runs["replayed"] == 2
    same_bits(first, scheduled(compute, ol.fold_all(add, 0.0, ol.zip_with(mul, x, y))))


def test_contents_changed_in_place_are_read_again(runs):
    x = RNG.random(N)
    node = ol.fold_all(add, 0.0, x)
    ol.compute_s(node)
    x[:] = 1.0
    assert float(ol.compute_s(ol.fold_all(add, 0.0, x))) == N
    assert runs["replayed"] == 1


def test_aliasing_between_inputs_is_part_of_the_key(runs):
    x, y = RNG.random(N), RNG.random(N)
    same = ol.compute_s(ol.fold_all(add, 0.0, ol.zip_with(mul, x, x)))
    other = ol.compute_s(ol.fold_all(add, 0.0, ol.zip_with(mul, x, y)))
    same_bits(other, scheduled(ol.compute_s, ol.fold_all(add, 0.0, ol.zip_with(mul, x, y))))
    same_bits(same, scheduled(ol.compute_s, ol.fold_all(add, 0.0, ol.zip_with(mul, x, x))))
    assert runs["replayed"] == 0  # two signatures: each recorded once
    ol.compute_s(ol.fold_all(add, 0.0, ol.zip_with(mul, y, y)))
    assert runs["replayed"] == 1


def test_a_rebound_captured_number_or_array_is_read_again(monkeypatch, runs):
    x = RNG.random(N).astype(np.float32)
    before = ol.compute_p(ol.fold_all(add, 0.0, ol.map(scaled, x)))
    monkeypatch.setattr(HERE, "SCALE", 3.0)
    after = ol.compute_p(ol.fold_all(add, 0.0, ol.map(scaled, x)))
    same_bits(after, scheduled(ol.compute_p, ol.fold_all(add, 0.0, ol.map(scaled, x))))
    assert float(after) != float(before)
    w_sum = ol.compute_p(ol.fold_all(add, 0.0, ol.generate((N,), weighted_at)))
    monkeypatch.setattr(HERE, "W", np.ones(N, np.float32))
    assert float(ol.compute_p(ol.fold_all(add, 0.0, ol.generate((N,), weighted_at)))) == N * 0.5
    assert float(w_sum) != N * 0.5


def test_the_neutral_element_is_keyed_bit_for_bit(runs):
    empty = np.zeros(0)
    assert str(ol.compute_s(ol.fold_all(add, 0.0, empty))) == "0.0"
    assert str(ol.compute_s(ol.fold_all(add, -0.0, empty))) == "-0.0"
    assert str(ol.compute_s(ol.fold_all(add, 0.0, empty))) == "0.0"
    assert runs["replayed"] == 1


def test_another_shape_or_dtype_is_scheduled_again(runs):
    for n, dt in ((N, np.float64), (N + 1, np.float64), (N, np.float32), (N, np.int32)):
        x = (RNG.random(n) * 100).astype(dt)
        got = ol.compute_p(ol.fold_all(add, dt(0), x))
        same_bits(got, scheduled(ol.compute_p, ol.fold_all(add, dt(0), x)))
    assert runs == {"replayed": 0, "scheduled": 4}


def test_dtype_and_out_take_the_scheduled_path(runs):
    x = RNG.random((5, 4 * 8192))
    node = ol.fold(add, 0.0, x)
    ol.compute_s(node)
    out = np.empty(5, np.float32)
    ol.compute_s(node, out=out)
    got = ol.compute_s(node, dtype=np.float32)
    same_bits(got, out)
    assert runs == {"replayed": 0, "scheduled": 3}


@pytest.mark.parametrize("compute", COMPUTES, ids=["s", "p"])
def test_scans_replay_with_the_scheduled_bits(compute, mode, runs):
    def trees(x, y):
        return [
            ol.fold_all(add, 0.0, ol.scanl1(add, ol.map(scaled, x))),
            ol.scanr(add, 1.0, x.reshape(3, -1)),
            ol.scanl_total(add, 0.0, x)[1],
            ol.scanl1(lambda a, b: (a[0] + b[0], a[1] * b[1]), (x, y)),
        ]

    for t in trees(RNG.random(3000), RNG.random(3000)):
        compute(t)
    assert runs == {"replayed": 0, "scheduled": 4}
    for _ in range(2):
        x, y = RNG.random(3000), RNG.random(3000)
        for t in trees(x, y):
            same_bits(compute(t), scheduled(compute, t))
    assert runs["replayed"] >= 6  # (the tuple scan's pair result, too, where recorded)


def test_a_scans_neutral_element_is_read_again(runs):
    x = RNG.random(500)
    for z in (0.0, 0.0, 2.5, -1.0):
        got = ol.compute_s(ol.scanl(add, z, x))
        assert got[0] == z and got[-1] == pytest.approx(z + x.sum())
    assert runs["replayed"] == 1  # (the second call only: every other z is another key)


def test_segmented_scans_and_capturing_combines_are_not_replayed(runs):
    x, seg = RNG.random(100), np.array([30, 0, 70])
    for _ in range(2):
        ol.compute_s(ol.fold_all(add, 0.0, ol.scanl1_seg(add, x, seg)))
    assert runs["replayed"] == 0
    assert not replay.replayable(ol.fold_all(add, 0.0, ol.scanl1_seg(add, x, seg)))
    k = np.float64(2.0)

    def scaled_add(a, b):
        return a + b * k

    for _ in range(2):
        got = ol.compute_s(ol.scanl1(scaled_add, x))
    assert runs["replayed"] == 0
    np.testing.assert_allclose(got[:3], [x[0], x[0] + 2 * x[1], x[0] + 2 * x[1] + 2 * x[2]])


def test_rows_a_map_after_the_fold_and_fold_seg_replay(mode, runs):
    a = RNG.random((3, 2 * 8192 + 7))
    seg = np.array([5, 0, 40000, 3, a.shape[1] * 3 - 40008])
    for _ in range(2):
        a = RNG.random((3, 2 * 8192 + 7))
        rows = ol.map(lambda v: v * 2.0, ol.fold(add, 0.0, a))
        segs = ol.fold_seg(add, 0.0, a.reshape(-1), seg)
        same_bits(ol.compute_p(rows), scheduled(ol.compute_p, rows))
        same_bits(ol.compute_p(segs), scheduled(ol.compute_p, segs))
    assert runs["replayed"] == 2


def test_a_stencil_under_a_fold_replays(runs):
    def blur(get):
        return get(-1) + get(0) + get(1)

    for _ in range(3):
        x = RNG.random(N)
        node = ol.fold_all(add, 0.0, ol.stencil(blur, ol.map(lambda v: v + 1.0, x), "clamp"))
        same_bits(ol.compute_p(node), scheduled(ol.compute_p, node))
    assert runs["replayed"] == 2


def test_tuple_folds_replay_each_component(runs):
    def both(a, b):
        return a[0] + b[0], max(a[1], b[1])

    for _ in range(2):
        x = RNG.random(N)
        i = RNG.integers(0, 1000, N)
        got = ol.compute_p(ol.fold_all(both, (0.0, 0), (x, i)))
        want = scheduled(ol.compute_p, ol.fold_all(both, (0.0, 0), (x, i)))
        for g, w in zip(got, want, strict=True):
            same_bits(g, w)
    assert runs["replayed"] == 1


def test_the_signature_refuses_values_of_other_kinds():
    assert replay.signature([np.zeros(3), 1, 2.0, np.float32(1)]) is not None
    assert replay.signature([(1, 2)]) is None
    assert replay.signature(["x"]) is None
    x = np.zeros(3)
    assert replay.signature([x, x]) != replay.signature([x, np.zeros(3)])
    assert replay.signature([0.0]) != replay.signature([-0.0])
    assert replay.signature([float("nan")]) == replay.signature([float("nan")])


def test_a_recorder_refuses_a_step_reading_an_array_of_unknown_origin():
    rec = replay.Recorder([np.zeros(3)])
    rec.step(lambda v: v + 1, [np.ones(3)], np.ones(3))
    assert rec.refused is not None
    assert rec.plan(np.ones(3)) is None
    known = np.zeros(3)
    rec = replay.Recorder([known])
    out = known + 1
    rec.step(lambda v: v + 1, [known], out)
    plan = rec.plan(out)
    assert plan is not None
    np.testing.assert_array_equal(plan.run([np.full(3, 5.0)]), np.full(3, 6.0))
    assert rec.plan(known) is None  # a captured array is not a fresh result


def test_a_lambda_made_per_call_is_lowered_once_and_its_defaults_are_read(runs):
    x = RNG.random(N)
    for s in (1.0, 2, -0.0, 0.0, True, 3.5):
        got = ol.compute_s(ol.fold_all(add, -0.0, ol.map(lambda v, s=s: v * s, x)))
        same_bits(
            got, scheduled(ol.compute_s, ol.fold_all(add, -0.0, ol.map(lambda v, s=s: v * s, x)))
        )
        same_bits(ol.compute_s(ol.map(lambda v, s=s: v * s, x)), x * s)
    a, b = (ol.map(lambda v: v + 1.0, x) for _ in range(2))
    assert delayed_key(a) == delayed_key(b)
    c, d = (ol.map(lambda v, s=s: v * s, x) for s in (0.0, -0.0))
    assert delayed_key(c) != delayed_key(d)


def _sq(v):
    return v * v


TREES = {
    "sum": lambda x, y, s: ol.fold_all(add, s, x),
    "dotp": lambda x, y, s: ol.fold_all(add, s, ol.zip_with(mul, x, y)),
    "squares": lambda x, y, s: ol.fold_all(add, s, ol.map(_sq, x)),
    "rows": lambda x, y, s: ol.fold(add, s, x.reshape(2, -1)),
    "rows then map": lambda x, y, s: ol.map(_sq, ol.fold(add, s, x.reshape(2, -1))),
}


@settings(max_examples=12, deadline=None)
@given(
    tree=st.sampled_from(sorted(TREES)),
    n=st.sampled_from([0, 2, 64, 2 * 8192 + 6, 5 * 8192]),
    dt=st.sampled_from([np.float32, np.float64, np.int64]),
    zero=st.sampled_from([0, -0.0, 3]),
    alias=st.booleans(),
    target=st.sampled_from(COMPUTES),
    seed=st.integers(0, 2**16),
)
def test_random_trees_replay_with_the_scheduled_bits(tree, n, dt, zero, alias, target, seed):
    """Two calls of a random fold tree with fresh data, and a third with the other
    aliasing: each equals the scheduled path bit for bit (the 2nd, 3rd may replay)."""
    rng = np.random.default_rng(seed)
    s = dt(zero) if isinstance(zero, float) and dt is not np.int64 else dt(int(zero))
    for aliased in (alias, alias, not alias):
        x = (rng.standard_normal(n) * 100).astype(dt)
        y = x if aliased else (rng.standard_normal(n) * 100).astype(dt)
        got = target(TREES[tree](x, y, s))
        same_bits(got, scheduled(target, TREES[tree](x, y, s)))


def _helper(v):
    return v + 1.0


def _via_helper(v):
    return _helper(v) * 2.0


def test_a_kept_tree_finds_its_entry_on_itself_and_still_sees_a_rebound_helper(monkeypatch, runs):
    x = RNG.random(N)
    node = ol.fold_all(add, 0.0, ol.map(_via_helper, x))
    first = ol.compute_s(node)
    walks = []
    real_key = driver._table_key
    monkeypatch.setattr(driver, "_table_key", lambda t: walks.append(t) or real_key(t))
    same_bits(ol.compute_s(node), first)
    assert walks == [] and runs["replayed"] == 1  # (no structural key: the remembered entry)
    monkeypatch.setattr(HERE, "_helper", lambda v: v - 1.0)  # the kernels built in the old one
    rebound = ol.compute_s(node)
    same_bits(rebound, scheduled(ol.compute_s, ol.fold_all(add, 0.0, ol.map(_via_helper, x))))
    assert float(rebound) != float(first) and walks
    driver.clear_dispatch_table()  # every entry dropped: the tree's is looked up again
    walks.clear()
    same_bits(ol.compute_s(node), rebound)
    assert walks


KEYS = np.arange(400) % 9
STEP = 7


def key_of(i):
    return KEYS[i] if i % STEP != 0 else IGNORE


@pytest.mark.parametrize("compute", COMPUTES, ids=["s", "p"])
def test_a_permute_replays_and_reads_its_index_functions_captures_anew(
    compute, mode, runs, monkeypatch
):
    # the index function's captured array and number are the step's inputs: new contents,
    # a rebound array and another number all give the scheduled values
    def tree(x):
        return ol.map(scaled, permute(add, np.zeros(9), key_of, ol.map(scaled, x)))

    for k in range(5):
        if k == 2:
            KEYS[:] = RNG.integers(0, 9, KEYS.size)  # (in place)
        if k == 3:
            monkeypatch.setattr(HERE, "KEYS", RNG.integers(0, 9, KEYS.size))  # (rebound)
        if k == 4:
            monkeypatch.setattr(HERE, "STEP", 3)  # (another captured number)
        x = RNG.random(KEYS.size)
        t = tree(x)
        same_bits(compute(t), scheduled(compute, t))
        kept = np.arange(x.size) % STEP != 0
        want = np.bincount(KEYS[kept], weights=2.0 * x[kept], minlength=9) * 2.0
        np.testing.assert_allclose(compute(t), want)
    assert runs["replayed"] >= 5


def test_a_scatter_is_not_replayed(runs):
    to = np.array([3, 1, 2])
    for _ in range(2):
        got = ol.compute_s(scatter(to, np.zeros(5), np.array([1.0, 2.0, 3.0])))
    np.testing.assert_array_equal(got, [0.0, 2.0, 3.0, 1.0, 0.0])
    assert runs["replayed"] == 0


def _rows_minus_cols(i, j):
    return i * 10 - j


def _plus(a, b):
    return a + b


@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p])
def test_a_rebuilt_tree_whose_nodes_hold_other_extents_is_not_replayed_as_the_last(compute):
    # A generate's shape, an extend's new axis: the node's own extents, not a captured
    # array's; two trees of one structure that hold other extents have other schedules.
    for shape in [(2, 3), (3, 4), (2, 3)]:
        got = compute(ol.scanl1(_plus, ol.generate(shape, _rows_minus_cols)))
        want = np.cumsum(np.fromfunction(lambda i, j: i * 10 - j, shape, dtype=np.int64), axis=1)
        assert got.shape == shape and got.tolist() == want.tolist()
    v = np.arange(4, dtype=np.int64)
    for k in [1, 3, 1]:
        got = compute(ol.scanl1(_plus, ol.extend((k, ol.ALL), v)))
        assert got.shape == (k, 4) and got.tolist() == [np.cumsum(v).tolist()] * k
