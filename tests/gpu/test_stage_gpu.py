"""Staged kernels (``ptx.passes.stage``) on the GPU, register-blocked (``ptx.passes.jam``)
where they can be: 16 x 16 thread tiles of 4 x 4 elements each, shared memory and barriers
give exactly what one CPU thread gives, at sizes with many tiles and chunks."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.backend import GPUBackend
from offload.runtime.gpu import device_info
from tests.corpus.staged import CASES, StagedCase, matmul
from tests.corpus.staged_lines import CASES as LINE_CASES
from tests.corpus.staged_lines import LONG_CASES, LineCase
from tests.ptx.variants import BLOCKINGS, LINE, TILE

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(
    "case",
    [
        *CASES,
        matmul(300, 333, 517),
        matmul(17, 2049, 64),
        matmul(1000, 3, 250),
        matmul(63, 65, 100),
    ],
    ids=repr,
)
def test_compute_g_matches_compute_s_bit_for_bit(case: StagedCase):
    _same(case.fn, case.shape)


@pytest.mark.parametrize("case", [*LINE_CASES, *LONG_CASES], ids=repr)
def test_staged_lines_match_compute_s_bit_for_bit(case: LineCase):
    _same(case.fn, (case.n,))


@pytest.mark.parametrize("case", LONG_CASES, ids=repr)
def test_long_rank_one_loops_run_in_staged_lines(case: LineCase):
    ir = run_pipeline(check_and_lower(case.fn, 1).ir, CompileOptions())
    kernel = GPUBackend(mode="device").compile(ir, CompileOptions())
    assert kernel.leading().source.tile == LINE and kernel.leading().source.blocking == ()


def _same(fn, shape):
    got = ol.compute_g(shape, fn)
    want = ol.compute_s(shape, fn)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(g), w)


def test_the_matmul_kernel_is_staged_and_blocked():
    case = matmul(300, 333, 517)
    ir = run_pipeline(check_and_lower(case.fn, 2).ir, CompileOptions())
    kernel = GPUBackend(mode="device").compile(ir, CompileOptions())
    lead = kernel.leading()
    assert lead.source.tile == TILE and lead.source.blocking == BLOCKINGS[0]
    assert lead.attributes["local_size_bytes"] == 0  # no spilled sums


@pytest.mark.parametrize(
    ("case", "blocking"),
    [
        (matmul(100, 100, 300), ()),
        (matmul(1100, 1100, 40), (4, 4)),
        (matmul(2100, 2050, 20), (8, 8)),
    ],
    ids=repr,
)
def test_small_spaces_run_a_smaller_blocking_with_the_same_values(case, blocking):
    ir = run_pipeline(check_and_lower(case.fn, 2).ir, CompileOptions())
    kernel = GPUBackend(mode="device").compile(ir, CompileOptions())
    sms = device_info().sm_count
    assert 81 < sms <= 289  # the cases' tile counts assume that many SMs
    assert kernel.first.kernel.pick(case.shape, []).source.blocking == blocking
    np.testing.assert_array_equal(
        np.asarray(ol.compute_g(case.shape, case.fn)), ol.compute_s(case.shape, case.fn)
    )
