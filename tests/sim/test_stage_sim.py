"""Staged kernels (``ptx.passes.stage``), register-blocked ones (``ptx.passes.jam``) among
them, under the simulator: shared-memory tiles, barriers, threads and copies past the edge
and the tile loop give exactly what one CPU thread gives."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from offload.ir.tile_ops import tile_of
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.plan import SIM_PLAN
from tests.corpus.staged import CASES, StagedCase, matmul, pairwise_distance
from tests.ptx.variants import SIM_BLOCKINGS, SIM_TILE, kernel_ir

pytestmark = pytest.mark.sim


# Blocked tiles of 8 x 12 elements: these shapes take several tiles, with edges inside the
# copies of a thread (rows 8..12 of 13, columns 24..28 of 29), and loops of several chunks.
BIG = [matmul(13, 29, 21, seed=5), matmul(17, 12, 9, seed=6), matmul(8, 25, 40, seed=7)]


@pytest.mark.parametrize("case", [*CASES, *BIG], ids=repr)
def test_compute_g_matches_compute_s_bit_for_bit(case: StagedCase):
    ir = run_pipeline(check_and_lower(case.fn, 2).ir, CompileOptions())
    staged = kernel_ir(ir, CompileOptions(), 32, simulator=True)
    assert (tile_of(staged) == SIM_TILE) is case.staged
    if case.staged:
        assert staged.blocking == (SIM_BLOCKINGS[0] if case.blocked else ())
    else:  # nothing staged: the walking kernel where its jam applies (tests/sim/test_walk_sim)
        assert staged.blocking in ((), (SIM_PLAN.walk, 1))
    got = ol.compute_g(case.shape, case.fn)
    want = ol.compute_s(case.shape, case.fn)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(g), w)


def test_bounds_checked_kernels_are_not_staged_and_still_fault():
    a = np.ones((3, 9), np.float32)

    def f(i, j):
        acc = np.float32(0.0)
        for k in range(10):  # one past the end
            acc += a[i, k] * a[j, k]
        return acc

    ir = run_pipeline(check_and_lower(f, 2).ir, CompileOptions(bounds_check=True))
    assert tile_of(kernel_ir(ir, CompileOptions(bounds_check=True), 32, simulator=True)) is None
    saved = ol.config.bounds_check
    try:
        ol.config.bounds_check = True
        with pytest.raises(IndexError, match="out-of-bounds read of 'a'"):
            ol.compute_g((3, 3), f)
    finally:
        ol.config.bounds_check = saved


def test_the_unblocked_staged_kernel_still_runs_when_jam_is_disabled():
    case = pairwise_distance()
    saved = ol.config.disabled_passes
    try:
        ol.config.disabled_passes = frozenset({"jam"})
        got = ol.compute_g(case.shape, case.fn)
    finally:
        ol.config.disabled_passes = saved
    np.testing.assert_array_equal(np.asarray(got), ol.compute_s(case.shape, case.fn))
