"""compute_p's size rules for permute and filter (docs/collectives.md, "compute_p and small
inputs"; issue 18 item 6, issue 16 item 4): small work runs compute_s's kernels, the
partial-row algorithm starts at a size fixed by the sizes alone, and on either side of
each threshold the bits are the same run to run and do not depend on the thread count;
integer results equal compute_s's exactly."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import offload as ol
from offload.acc import filter as filter_mod
from offload.acc import permute as permute_mod
from offload.acc import permute_cpu
from offload.acc.filter import FILTER_CHUNK
from offload.acc.filter import filter as ofilter
from offload.acc.permute import (
    IGNORE,
    MAX_TASKS,
    PARTIAL_TASK,
    PARTIALS_MIN,
    ROW_SOURCES,
    SEQUENTIAL_BELOW,
    PermuteIndexError,
    cpu_tasks,
    permute,
)
from offload.cpu.threads import ThreadChoice
from tests.acc.skeleton_refs import add, ref_permute

pytestmark = pytest.mark.cpu

BINS = 256


@pytest.mark.unit
def test_partial_rows_start_at_partials_min_and_stay_small() -> None:
    assert cpu_tasks(PARTIALS_MIN - 1, BINS) == 1
    assert cpu_tasks(PARTIALS_MIN, BINS) == PARTIALS_MIN // PARTIAL_TASK > 1
    assert cpu_tasks(1 << 40, BINS) == MAX_TASKS
    # at most n / ROW_SOURCES partial values in all the rows
    assert cpu_tasks(PARTIALS_MIN, PARTIALS_MIN // ROW_SOURCES) == 1
    assert cpu_tasks(PARTIALS_MIN, PARTIALS_MIN // (2 * ROW_SOURCES)) == 2
    assert cpu_tasks(PARTIALS_MIN, 0) == PARTIALS_MIN // PARTIAL_TASK


def _spy_partials(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = permute_cpu.partials

    def spy(base: Any, tasks: int, arrays: Any, caps: Any, neutral: Any = None) -> None:
        calls.append(tasks)
        real(base, tasks, arrays, caps, neutral)

    monkeypatch.setattr(permute_mod, "partials", spy)  # (float combines)
    monkeypatch.setattr(permute_cpu, "partials", spy)  # (integer ones, chosen by measurement)
    return calls


def _spy_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = permute_cpu.accumulate

    def spy(base: Any, arrays: Any, caps: Any) -> None:
        calls.append(int(arrays[0].shape[0]))
        real(base, arrays, caps)

    monkeypatch.setattr(permute_cpu, "accumulate", spy)
    return calls


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_integer_combines_take_the_sequential_pass_on_one_thread(
    monkeypatch: pytest.MonkeyPatch, dtype: Any
) -> None:
    n = PARTIALS_MIN
    keys = np.random.default_rng(5).integers(0, BINS, n)

    def ix(i: int) -> Any:
        return keys[i]

    hist = permute(add, np.zeros(BINS, dtype), ix, np.ones(n, dtype))
    want = ol.compute_s(hist)
    partial_rows, passes = _spy_partials(monkeypatch), _spy_passes(monkeypatch)
    _threads(monkeypatch, "one")
    assert ol.compute_p(hist).tobytes() == want.tobytes()
    assert passes == [n] and partial_rows == []  # (integers: the pass, compute_s's bits)
    _threads(monkeypatch, "all")
    assert ol.compute_p(hist).tobytes() == want.tobytes()
    assert partial_rows == [PARTIALS_MIN // PARTIAL_TASK] and passes == [n]


def test_float_combines_keep_the_partial_rows_on_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    n = PARTIALS_MIN
    keys = np.random.default_rng(6).integers(0, BINS, n)
    vals = np.random.default_rng(7).standard_normal(n)

    def ix(i: int) -> Any:
        return keys[i]

    sums = permute(add, np.zeros(BINS), ix, vals)
    partial_rows, passes = _spy_partials(monkeypatch), _spy_passes(monkeypatch)
    _threads(monkeypatch, "one")
    one = ol.compute_p(sums).tobytes()
    _threads(monkeypatch, "all")
    assert ol.compute_p(sums).tobytes() == one  # (the grouping is fixed by the sizes)
    assert passes == [] and partial_rows == [PARTIALS_MIN // PARTIAL_TASK] * 2


def _threads(monkeypatch: pytest.MonkeyPatch, which: str) -> None:
    pick = (lambda self, n: 1) if which == "one" else (lambda self, n: self.max_threads)
    monkeypatch.setattr(ThreadChoice, "pick", pick)


@pytest.mark.parametrize("n", [PARTIALS_MIN - 1, PARTIALS_MIN])
def test_histogram_on_both_sides_of_partials_min(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.random(n, dtype=np.float32)
    vals = rng.standard_normal(n)

    def bin_of(i: int) -> Any:
        return min(int(x[i] * BINS), BINS - 1)

    hist = permute(add, np.zeros(BINS, np.int64), bin_of, np.ones(n, np.int64))
    sums = permute(add, np.zeros(BINS), bin_of, vals)
    calls = _spy_partials(monkeypatch)
    want = np.bincount(np.minimum((x * BINS).astype(np.int64), BINS - 1), minlength=BINS)
    seq = ol.compute_s(hist)
    np.testing.assert_array_equal(seq, want)
    got = {}
    for which in ("one", "all"):
        _threads(monkeypatch, which)
        got[which] = [ol.compute_p(hist).tobytes(), ol.compute_p(sums).tobytes()]
        assert got[which] == [ol.compute_p(hist).tobytes(), ol.compute_p(sums).tobytes()]
    assert got["one"] == got["all"]  # the thread count changes nothing
    assert got["one"][0] == seq.tobytes()  # integer counts: compute_s's exactly
    sums_s = ol.compute_s(sums)
    if n < PARTIALS_MIN:
        assert calls == []
        assert got["one"][1] == sums_s.tobytes()  # compute_s's pass: its bits
    else:
        assert set(calls) == {PARTIALS_MIN // PARTIAL_TASK}
        p = np.frombuffer(got["one"][1], np.float64)
        np.testing.assert_allclose(p, sums_s, rtol=1e-9, atol=1e-9)


def test_many_destinations_keep_the_sequential_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    n = PARTIALS_MIN
    dests = n // ROW_SOURCES  # the rows would hold too many values: one task
    keys = np.random.default_rng(3).integers(0, dests, n)
    vals = np.random.default_rng(4).standard_normal(n)

    def ix(i: int) -> Any:
        return keys[i]

    calls = _spy_partials(monkeypatch)
    node = permute(add, np.zeros(dests), ix, vals)
    assert ol.compute_p(node).tobytes() == ol.compute_s(node).tobytes()
    assert calls == []


@pytest.mark.parametrize("n", [SEQUENTIAL_BELOW - 1, SEQUENTIAL_BELOW])
def test_small_permutes_run_compute_s_kernels(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    targets: list[str] = []
    real = permute_mod.cached_module

    def spy(target: str, key: Any, *rest: Any) -> Any:
        if key[0] == "dests":
            targets.append(target)
        return real(target, key, *rest)

    monkeypatch.setattr(permute_mod, "cached_module", spy)
    a = np.arange(n) * 0.5

    def ix(i: int) -> Any:
        return (i * 7) % 97

    node = permute(add, np.zeros(97), ix, a)
    got = ol.compute_p(node)
    assert got.tobytes() == ol.compute_s(node).tobytes()
    np.testing.assert_array_equal(got, ref_permute(add, np.zeros(97), ix, a, IGNORE))
    assert targets == ["cpu-par" if n >= SEQUENTIAL_BELOW else "cpu-seq", "cpu-seq"]  # p, s


def test_rank2_sources_in_parallel_blocks() -> None:
    rows, cols = 600, 400
    assert SEQUENTIAL_BELOW <= rows * cols < PARTIALS_MIN
    a = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)

    def ix(i: int, j: int) -> Any:
        return (i * 7 + j) % 50

    node = permute(add, np.zeros(50, np.int64), ix, a)
    np.testing.assert_array_equal(ol.compute_p(node), ol.compute_s(node))
    keys = (np.arange(rows)[:, None] * 7 + np.arange(cols)) % 50
    want = np.bincount(keys.ravel(), weights=a.ravel(), minlength=50)
    np.testing.assert_array_equal(ol.compute_p(node), want.astype(np.int64))


def test_a_bad_destination_in_a_parallel_block_names_the_element() -> None:
    n = 3 * SEQUENTIAL_BELOW

    def ix(i: int) -> Any:
        return 1000 if i == n - 5 else i % 10

    with pytest.raises(PermuteIndexError, match=rf"source element \({n - 5},\) to \(1000,\)"):
        ol.compute_p(permute(add, np.zeros(10), ix, np.ones(n)))


def _filter_cases(n: int) -> dict[str, np.ndarray[Any, Any]]:
    idx = np.arange(n)
    rng = np.random.default_rng(n)
    return {
        "all": np.ones(n, bool),
        "none": np.zeros(n, bool),
        "half": rng.random(n) < 0.5,
        "chunk firsts": idx % FILTER_CHUNK == 0,
        "chunk lasts": idx % FILTER_CHUNK == FILTER_CHUNK - 1,
        "last": idx == n - 1,
    }


@pytest.mark.parametrize(
    "n",
    [
        filter_mod.SEQUENTIAL_BELOW - 1,
        filter_mod.SEQUENTIAL_BELOW,
        filter_mod.SEQUENTIAL_BELOW + 5 * FILTER_CHUNK + 7,
    ],
)
def test_filter_on_both_sides_of_the_threshold(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    a = np.random.default_rng(1).random(n).astype(np.float32)
    for name, mask in _filter_cases(n).items():

        def pred(v: Any) -> Any:
            return v < 0.0

        marks = np.where(mask, -a, a)  # negative where kept
        node = ofilter(pred, marks)
        want = marks[mask]
        got = {}
        for which in ("one", "all"):
            _threads(monkeypatch, which)
            got[which] = ol.compute_p(node)
            np.testing.assert_array_equal(got[which], want, err_msg=name)
        assert got["one"].tobytes() == got["all"].tobytes()
        np.testing.assert_array_equal(ol.compute_s(node), want, err_msg=name)


def test_filter_of_a_tuple_in_parallel() -> None:
    n = 3 * filter_mod.SEQUENTIAL_BELOW + 11
    keys = np.arange(n) % 7
    vals = np.arange(n, dtype=np.float64) * 0.5

    def big(kv: Any) -> Any:
        return kv[0] > 3

    k, v = ol.compute_p(ofilter(big, (keys, vals)))
    np.testing.assert_array_equal(k, keys[keys > 3])
    np.testing.assert_array_equal(v, vals[keys > 3])


def twice(a: Any, b: Any) -> Any:
    return a + a


def plus_one(a: Any, b: Any) -> Any:
    return a + 1


def old_plus_new(a: Any, b: Any) -> Any:
    return b + a


def smaller(a: Any, b: Any) -> Any:
    return min(a, b)


def test_plain_ops_are_an_op_of_both_operands() -> None:
    from offload.acc.combine import compile_combine
    from offload.ir.ops import Opcode

    dts = (np.dtype(np.int32),)
    want = {add: Opcode.ADD, old_plus_new: Opcode.ADD, smaller: Opcode.MIN}
    for f in (add, old_plus_new, smaller, twice, plus_one):
        sf = compile_combine(f, (dts, dts), "ol_comb", "c")
        assert permute_mod._plain_op(sf) is want.get(f), f.__name__
        # (the GPU's atomics: new + new is not an atomic add of new)
        native = permute_mod._native_op(sf, dts[0], "deterministic")
        assert (native is None) == (f not in want), f.__name__


def test_rows_from_the_neutral_element_give_the_bits_of_marked_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    n = PARTIALS_MIN + 3
    rng = np.random.default_rng(9)
    keys = rng.integers(0, 300, n) // 2  # destinations 150..299 receive nothing
    vals = rng.standard_normal(n).astype(np.float32)
    vals[rng.random(n) < 0.3] = 0.0
    vals[rng.random(n) < 0.3] = -0.0
    vals[keys == 7] = -0.0  # a destination that receives only -0.0
    vals[keys == 8] = 0.0
    defaults = np.where(np.arange(300) % 2 == 0, np.float32(0.0), np.float32(-0.0))
    ints = rng.integers(-(2**31), 2**31 - 1, n).astype(np.int32)

    def ix(i: int) -> Any:
        return keys[i]

    fives = np.full(300, 5, np.int32)
    nodes = [permute(add, defaults, ix, vals), permute(smaller, fives, ix, ints)]
    calls = _spy_partials(monkeypatch)
    _threads(monkeypatch, "all")  # (an integer permute may else measure its way to the pass)
    fast = [ol.compute_p(node).tobytes() for node in nodes]
    assert len(calls) == len(nodes)
    monkeypatch.setattr(permute_mod, "_neutral", lambda sf, dts: None)
    assert [ol.compute_p(node).tobytes() for node in nodes] == fast
    assert ol.compute_s(nodes[1]).tobytes() == fast[1]  # integers: compute_s's bits


def _drive(choice: ThreadChoice, elements: int, seconds: Any, calls: int) -> list[int]:
    picked = []
    for k in range(calls):
        threads = choice.pick(elements)
        picked.append(threads)
        choice.record(elements, threads, seconds(k, threads))
    return picked


def _unloaded() -> ThreadChoice:
    choice = ThreadChoice(4)
    choice.loaded = lambda: False  # type: ignore[method-assign]
    return choice


@pytest.mark.unit
def test_all_threads_only_where_clearly_faster() -> None:
    from offload.cpu.threads import ALL_MARGIN, MAX_PERIOD, PROBES

    close = _drive(_unloaded(), 10**6, lambda k, t: 1.0 if t == 1 else 0.9, 1000)
    # 0.9x: not worth the tail risk (each measurement of the other mode: PROBES launches)
    assert close[-500:].count(4) <= PROBES * (500 // MAX_PERIOD + 2)
    clear = _drive(_unloaded(), 10**6, lambda k, t: 1.0 if t == 1 else ALL_MARGIN - 0.05, 300)
    assert clear[-100:].count(4) >= 100 - PROBES


@pytest.mark.unit
def test_a_preempted_launch_does_not_flip_the_choice_for_long() -> None:
    from offload.cpu.threads import MAX_PERIOD, PROBES

    # one thread 1.0, all threads 0.95, one launch in 50 preempted for 50x its time
    def seconds(k: int, threads: int) -> float:
        return (1.0 if threads == 1 else 0.95) * (50.0 if k % 50 == 7 else 1.0)

    picked = _drive(_unloaded(), 10**4, seconds, 2000)
    assert picked[500:].count(4) <= PROBES * (1500 // MAX_PERIOD + 2)  # the old rule: 1 in 10
