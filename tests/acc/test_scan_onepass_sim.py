"""The one-pass scan (``scan_onepass_src``: tiles in counter order, a decoupled look-back)
under the CUDA simulator: which scans take it, every form and shape against Python loops,
and the look-back over a tile that has published only its total (the simulator runs blocks
one after another, so only a hand-set status reaches that branch)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload.acc import scan as S
from offload.acc import scan_job as SJ
from offload.acc.combine import ScalarFunction
from offload.acc.skeletons import scan_onepass_src as onepass_src
from offload.acc.skeletons.direct import compute
from offload.acc.skeletons.operands import combine_for
from offload.acc.skeletons.scan_onepass_src import pad
from tests.acc.sim_lane import needs_simulator
from tests.acc.skeleton_refs import add, every_scan_form, matmul2, ref_scan, ref_seg_scan

pytestmark = [pytest.mark.sim, needs_simulator]

# With the simulator's 32 threads a block, a tile is 32 chunks of 32: 1024 elements.
TILE = 32 * 32


@pytest.fixture
def one_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the one-pass launches."""
    seen: list[int] = []
    real = SJ.ScanJob._one_pass

    def spy(self: SJ.ScanJob, *args: Any, **kw: Any) -> None:
        seen.append(1)
        real(self, *args, **kw)

    monkeypatch.setattr(SJ.ScanJob, "_one_pass", spy)
    return seen


@pytest.mark.parametrize("n", [33, TILE - 1, TILE, 3 * TILE + 77])
def test_integer_scans_take_one_pass_and_equal_python_loops(n: int, one_passes: list[int]) -> None:
    a = np.random.default_rng(n).integers(-(2**40), 2**40, (2, n), dtype=np.int64)
    cases = every_scan_form(a)
    for node, want in cases:
        got = np.asarray(compute(node, "gpu-sim"))
        np.testing.assert_array_equal(got, want)
    assert len(one_passes) == len(cases)


def test_int8_wraps_as_the_tree_does(one_passes: list[int]) -> None:
    a = np.random.default_rng(1).integers(-128, 128, 2 * TILE + 5).astype(np.int8)
    got = np.asarray(compute(S.scanl1(add, a), "gpu-sim", "cross_target"))
    seq = np.asarray(compute(S.scanl1(add, a), "cpu-seq", "cross_target"))
    assert got.dtype == np.int8
    assert got.tobytes() == seq.tobytes()
    assert one_passes == [1]


def test_non_commutative_tuples_keep_operand_order(one_passes: list[int]) -> None:
    rng = np.random.default_rng(9)
    comps = [rng.integers(-2, 3, TILE + 300, dtype=np.int64) for _ in range(4)]
    for right in (False, True):
        node = S.scanr1(matmul2, tuple(comps)) if right else S.scanl1(matmul2, tuple(comps))
        got = compute(node, "gpu-sim")
        for g, w in zip(got, ref_scan(matmul2, None, comps, right=right), strict=True):
            np.testing.assert_array_equal(g, w)
    assert len(one_passes) == 2


def test_segmented_integer_scan_takes_one_pass(one_passes: list[int]) -> None:
    a = np.arange(1, 2 * TILE + 41, dtype=np.int32).reshape(2, -1)
    seg = np.array([0, 5, TILE, 0, 15, a.shape[1] - TILE - 20, 0])
    for z in (None, 1):
        node = S.scanl1_seg(add, a, seg) if z is None else S.scanl_seg(add, z, a, seg)
        np.testing.assert_array_equal(compute(node, "gpu-sim"), ref_seg_scan(add, z, a, seg))
    assert len(one_passes) == 2


def test_floats_take_one_pass_but_in_cross_target_mode(one_passes: list[int]) -> None:
    a = np.random.default_rng(3).standard_normal(2 * TILE + 9).astype(np.float32)
    cross = np.asarray(compute(S.scanl1(add, a), "gpu-sim", "cross_target"))
    assert one_passes == []  # (the chunk tree: compute_s's bits)
    assert (
        cross.tobytes()
        == np.asarray(compute(S.scanl1(add, a), "cpu-seq", "cross_target")).tobytes()
    )
    for mode in ("deterministic", "fast"):
        got = np.asarray(compute(S.scanl1(add, a), "gpu-sim", mode))
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, cross, rtol=1e-4, atol=1e-3)
    assert one_passes == [1, 1]


def test_short_rows_and_bools_keep_the_tree(one_passes: list[int]) -> None:
    a = np.arange(32, dtype=np.int32)  # one chunk: one launch already
    np.testing.assert_array_equal(compute(S.scanl1(add, a), "gpu-sim"), np.cumsum(a))
    b = np.ones(100, bool)

    def either(x: Any, y: Any) -> Any:
        return x | y

    np.testing.assert_array_equal(compute(S.scanl1(either, b), "gpu-sim"), b)
    assert one_passes == []


def first(a: Any, b: Any) -> Any:
    """Associative, not commutative: a scan of it repeats the first element."""
    return a


@pytest.mark.parametrize("window", [1, 32])
@pytest.mark.parametrize("f", [add, first])
def test_look_back_combines_a_published_total_with_an_earlier_prefix(
    f: Any, window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Three tiles of one row; tiles 0 and 1 are set by hand as a running GPU might leave
    # them -- tile 0 with its inclusive prefix (status 2), tile 1 with only its total
    # (status 1) -- and one block takes tile 2 (the counter starts at 2): its prefix must
    # be inc[0] . ag[1], combined in that order (``window`` 1: over two look-back steps).
    monkeypatch.setattr(onepass_src, "LOOK_BACK", window)
    n = 3 * TILE
    a = np.random.default_rng(5).integers(-9, 9, (1, n), dtype=np.int64)
    want = ref_scan(f, None, [a])[0]
    dts = (np.dtype(np.int64),)
    sf: ScalarFunction = combine_for(f, dts, "test")
    job = SJ.ScanJob("gpu-sim", "deterministic", sf, dts, [])
    tb = job.onepass_threads()
    assert tb == 32
    module = job.onepass_module(tb)
    p = pad(dts[0])
    ag, inc = np.zeros(3 * p, np.int64), np.zeros(3 * p, np.int64)
    inc[0] = want[0, TILE - 1]
    ag[p] = ref_scan(f, None, [a[:, TILE : 2 * TILE]])[0][0, -1]
    status = np.array([2, 1, 0], np.int32)
    ctr = np.array([2, 0, 0], np.int32)  # (tile counter, blocks finished, epoch)
    out = np.zeros((1, n), np.int64)
    i64 = np.int64
    head = (i64(n // 32), i64(n), i64(32), i64(0), i64(0), i64(3), i64(0))  # (no seed)
    seed = np.zeros(1, np.int64)
    module.launch("onepass", 3, *head, a, i64(0), out, status, ctr, ag, inc, seed, blocks=1)
    np.testing.assert_array_equal(out[0, 2 * TILE :], want[0, 2 * TILE :])
    assert status[2] == 2
    assert inc[2 * p] == want[0, -1]


@pytest.mark.parametrize("window", [1, 32])
def test_float_look_back_gives_the_same_bits_wherever_it_meets_a_prefix(
    window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A full run of six tiles (blocks one after another: each tile meets its predecessor's
    # prefix) leaves every tile's total and prefix published. Tile 5 is then run again
    # alone under statuses a running GPU might leave -- the newest prefix one, two or five
    # tiles back -- and must give the same bits: its prefix is the left fold of the
    # tiles' totals, whichever prefix the walk meets first.
    monkeypatch.setattr(onepass_src, "LOOK_BACK", window)
    n = 6 * TILE
    a = np.random.default_rng(11).standard_normal((1, n)).astype(np.float32)
    dts = (np.dtype(np.float32),)
    job = SJ.ScanJob("gpu-sim", "deterministic", combine_for(add, dts, "test"), dts, [])
    module = job.onepass_module(32)
    p = pad(dts[0])
    i64 = np.int64
    head = (i64(n // 32), i64(n), i64(32), i64(0), i64(0), i64(6), i64(0))  # (no seed)

    def run(status: np.ndarray, ctr: int, ag: np.ndarray, inc: np.ndarray) -> np.ndarray:
        out = np.zeros((1, n), np.float32)
        module.launch(
            "onepass", 6, *head, a, np.float32(0), out, status, np.array([ctr, 0, 0], np.int32),
            ag, inc, np.zeros(1, np.float32), blocks=1,
        )  # fmt: skip
        return out

    ag, inc = np.zeros(6 * p, np.float32), np.zeros(6 * p, np.float32)
    full = run(np.zeros(6, np.int32), 0, ag, inc)
    np.testing.assert_allclose(full[0], np.cumsum(a[0], dtype=np.float64), rtol=1e-4, atol=1e-3)
    # (the data is such that grouping matters: the totals' tree sum is not the left fold)
    tot = ag[p : 5 * p : p]
    assert inc[0] + ((tot[0] + tot[1]) + (tot[2] + tot[3])) != inc[4 * p]
    for status in ([2, 1, 1, 1, 1, 0], [2, 1, 2, 1, 1, 0], [2, 2, 2, 2, 1, 0], [2, 2, 2, 2, 2, 0]):
        inc_again = inc.copy()
        inc_again[5 * p] = 0
        got = run(np.array(status, np.int32), 5, ag.copy(), inc_again)
        assert got[0, 5 * TILE :].tobytes() == full[0, 5 * TILE :].tobytes(), status
        assert inc_again[5 * p] == inc[5 * p]
