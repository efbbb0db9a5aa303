"""Staged rank-1 kernels (lines of threads, ``offload.ptx.passes.stage``) under the simulator:
shared-memory lines and windows, barriers, threads past the edge and the line loop give
exactly what one CPU thread gives."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from offload.ir.tile_ops import tile_of
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from tests.corpus.staged_lines import CASES, LineCase, convolution
from tests.ptx.variants import SIM_LINE, kernel_ir

pytestmark = pytest.mark.sim


def _kernel_ir(case: LineCase, options: CompileOptions):
    ir = run_pipeline(check_and_lower(case.fn, 1).ir, options)
    return kernel_ir(ir, options, 32, simulator=True)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_compute_g_matches_compute_s_bit_for_bit(case: LineCase):
    assert (tile_of(_kernel_ir(case, CompileOptions())) == SIM_LINE) is case.staged
    got = ol.compute_g((case.n,), case.fn)
    want = ol.compute_s((case.n,), case.fn)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(g), w)


def test_the_unrolled_staged_kernel_runs_when_reroll_is_disabled():
    case = convolution(13, 21)
    saved = ol.config.disabled_passes
    try:
        ol.config.disabled_passes = frozenset({"reroll"})
        options = ol.config.compile_options()
        assert tile_of(_kernel_ir(case, options)) == SIM_LINE  # w's slots, no window
        got = ol.compute_g((case.n,), case.fn)
    finally:
        ol.config.disabled_passes = saved
    for g, w in zip(got, ol.compute_s((case.n,), case.fn), strict=True):
        np.testing.assert_array_equal(np.asarray(g), w)
