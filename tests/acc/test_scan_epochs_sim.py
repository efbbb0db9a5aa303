"""The one-pass scan's kept statuses and counters (``scan_onepass_src.EPOCHS``,
``workspace.kept``) under the CUDA simulator: a launch leaves them ready for the next one
on its stream -- the tile counter and the finished-block count back at zero, the next
epoch -- so a warm scan allocates and zeroes nothing, and a status an earlier epoch left
never reads as published."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload.acc import scan as S
from offload.acc import scan_job as SJ
from offload.acc.skeletons import scan_onepass_src as onepass_src
from offload.acc.skeletons import workspace
from offload.acc.skeletons.direct import compute
from offload.acc.skeletons.operands import combine_for
from offload.acc.skeletons.scan_onepass_src import pad
from tests.acc.sim_lane import needs_simulator
from tests.acc.skeleton_refs import add, ref_scan

pytestmark = [pytest.mark.sim, needs_simulator]

TILE = 32 * 32
"""A tile under the simulator: 32 chunks of 32 elements (its blocks are one warp)."""


def _state(tiles: int, dt: np.dtype[Any]) -> Any:
    """The statuses and counters kept for one-pass launches of ``tiles`` tiles here."""
    spec = ("onepass", tiles, (dt.str,))
    _, made = workspace.kept("gpu-sim", spec, lambda: pytest.fail("no kept workspace"))
    return made[0]


@pytest.fixture
def fresh_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    """No workspace kept from another test (and none left to the next)."""
    monkeypatch.setattr(workspace, "_SETS", type(workspace._SETS)())


def test_repeated_scans_reuse_statuses_and_counters(fresh_sets: None) -> None:
    n = 3 * TILE + 40  # (4 tiles)
    rng = np.random.default_rng(2)
    for epoch in range(1, 5):
        a = rng.integers(-(2**40), 2**40, n, dtype=np.int64)
        np.testing.assert_array_equal(compute(S.scanl1(add, a), "gpu-sim"), np.cumsum(a))
        state = _state(4, np.dtype(np.int64))
        # every tile published its prefix in this epoch; counters ready for the next
        assert state.tolist() == [4 * (epoch - 1) + 2] * 4 + [0, 0, epoch]


def test_spent_epochs_zero_the_statuses(fresh_sets: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onepass_src, "EPOCHS", 2)
    n = 2 * TILE
    rng = np.random.default_rng(4)
    seen = []
    for _ in range(3):
        a = rng.integers(-100, 100, n, dtype=np.int32)
        np.testing.assert_array_equal(compute(S.scanl1(add, a), "gpu-sim"), np.cumsum(a))
        seen.append(_state(2, np.dtype(np.int32)).tolist())
    assert seen == [[2, 2, 0, 0, 1], [0, 0, 0, 0, 0], [2, 2, 0, 0, 1]]


def test_a_stale_prefix_is_not_read_as_published() -> None:
    # Epoch 3: tile 0 has published its prefix, tile 1 only its total; tile 1's prefix
    # slot holds what epoch 2 left there (garbage now). One block takes tile 2: its
    # prefix must be inc[0] + ag[1], not the stale inc[1].
    n = 3 * TILE
    a = np.random.default_rng(6).integers(-9, 9, (1, n), dtype=np.int64)
    want = ref_scan(add, None, [a])[0]
    dts = (np.dtype(np.int64),)
    job = SJ.ScanJob("gpu-sim", "deterministic", combine_for(add, dts, "test"), dts, [])
    module = job.onepass_module(32)
    p = pad(dts[0])
    ag, inc = np.zeros(3 * p, np.int64), np.zeros(3 * p, np.int64)
    inc[0] = want[0, TILE - 1]
    ag[p] = want[0, 2 * TILE - 1] - want[0, TILE - 1]
    inc[p] = 10**9  # (epoch 2's)
    status = np.array([4 * 3 + 2, 4 * 3 + 1, 4 * 2 + 2], np.int32)
    ctr = np.array([2, 0, 3], np.int32)
    out = np.zeros((1, n), np.int64)
    i64 = np.int64
    head = (i64(n // 32), i64(n), i64(32), i64(0), i64(0), i64(3), i64(0))
    seed = np.zeros(1, np.int64)
    module.launch("onepass", 3, *head, a, i64(0), out, status, ctr, ag, inc, seed, blocks=1)
    np.testing.assert_array_equal(out[0, 2 * TILE :], want[0, 2 * TILE :])
    assert status[2] == 4 * 3 + 2
    assert ctr.tolist() == [0, 0, 4]
