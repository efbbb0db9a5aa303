"""Staged kernels (``offload.opt.stage``) under the simulator: shared-memory tiles, barriers,
threads past the edge and the tile loop give exactly what one CPU thread gives."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from offload import driver
from offload.ir.tile_ops import tile_of
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.variants import SIM_TILE, kernel_ir
from tests.corpus.staged import CASES, StagedCase

pytestmark = pytest.mark.sim


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_compute_g_matches_compute_s_bit_for_bit(case: StagedCase):
    ir = run_pipeline(driver.check_and_lower(case.fn, 2).ir, CompileOptions())
    staged = kernel_ir(ir, CompileOptions(), 32, simulator=True)
    assert (tile_of(staged) == SIM_TILE) is case.staged
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

    ir = run_pipeline(driver.check_and_lower(f, 2).ir, CompileOptions(bounds_check=True))
    assert tile_of(kernel_ir(ir, CompileOptions(bounds_check=True), 32, simulator=True)) is None
    saved = ol.config.bounds_check
    try:
        ol.config.bounds_check = True
        with pytest.raises(IndexError, match="out-of-bounds read of 'a'"):
            ol.compute_g((3, 3), f)
    finally:
        ol.config.bounds_check = saved
