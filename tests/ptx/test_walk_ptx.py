"""The walking kernel (``offload.ptx.passes.walk``) on its PTX: a thread computes four
neighbouring rows, and NVVM makes each read their windows share once -- a 5 x 5 window over
4 rows is 8 x 5 loads, not 4 x 25 -- a boundary test on the row is checked at run time, a
rank-3 kernel walks its planes, and a function whose other branches depend on the row is
left to the plain kernel."""

from __future__ import annotations

import re

import pytest

from offload.driver import specialise
from offload.ir.core import ConstArray
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.compile import compile_ptx
from offload.ptx.kernel_source import build_kernel_source
from offload.ptx.passes.walk import WalkRows
from offload.ptx.plan import GPU_PLAN
from tests.corpus.walking import conv5, halo7, row_branch, row_loaded, row_parity
from tests.ptx.variants import kernel_ir

pytestmark = pytest.mark.ptx


def _kernel(fn, options: CompileOptions = CompileOptions(), consts=None, rank: int = 2):
    ir = specialise(check_and_lower(fn, rank), None, options, consts)
    kir = kernel_ir(ir, options, 32, simulator=False)
    return kir, compile_ptx(build_kernel_source(kir, index_bits=32), "k", (9, 0))


def _loads(ptx: str) -> int:
    return len(re.findall(r"ld\.global\.f32", ptx))


def test_four_rows_of_a_5x5_window_read_8_rows_once():
    # The weights frozen (``ol.use``: constants, NVVM unrolls the window loops fully).
    fn = conv5(64, 48).fn
    consts = {1: ConstArray.of(fn.__closure__[0].cell_contents)}
    kir, ptx = _kernel(fn, consts=consts)
    assert kir.blocking == (GPU_PLAN.walk, 1) == (4, 1)
    assert _loads(ptx) == 8 * 5  # the image's taps, each once
    off, ptx_off = _kernel(fn, CompileOptions(disabled_passes=frozenset({"walk"})), consts)
    assert off.blocking == () and _loads(ptx_off) == 25


def test_each_copy_is_a_row_of_the_group_shifted_into_the_space():
    kir, _ = _kernel(conv5(64, 48).fn)
    src = build_kernel_source(kir, index_bits=32).source
    assert "min(np.int32(group * np.int32(4)), np.int32(n0 - np.int32(4)))" in src
    assert all(f"np.int32(ix0 + np.int32({c}))" in src for c in (1, 2, 3))


def test_a_boundary_test_on_the_row_walks_checked():
    # The halo test parts the copies in the first and last groups only: each of its
    # branches on the row checks that the copies agree (an xor per copy), else the
    # fallback computes the rows one after another (four copies of the element function).
    kir, ptx = _kernel(row_branch(64, 48).fn)
    assert kir.blocking == (4, 1)
    src = build_kernel_source(kir, index_bits=32).source
    assert src.count(" ^ ") == 3  # copy 0's test against each other copy's
    assert src.count("out0[") == 2 * 4  # the walk's stores and the fallback's
    assert _loads(ptx) >= 4 * 2 + 3  # the fallback's reads and the walk's shared ones


def test_other_branches_on_the_row_are_not_walked():
    for case in (row_parity(64, 48), row_loaded(64, 48)):
        kir, _ = _kernel(case.fn)
        assert kir.blocking == ()
        ir = run_pipeline(check_and_lower(case.fn, 2).ir, CompileOptions())
        assert WalkRows().rewrite(ir) is ir


def test_rank_3_walks_its_planes_and_other_ranks_do_not():
    import numpy as np

    kir, ptx = _kernel(halo7(40, 8, 8).fn, rank=3)
    assert kir.blocking == (4, 1, 1)
    src = build_kernel_source(kir, index_bits=32).source
    assert "group = tz" in src and "ix1 = ty" in src and "ix2 = tx" in src
    off, ptx_off = _kernel(
        halo7(40, 8, 8).fn, CompileOptions(disabled_passes=frozenset({"walk"})), rank=3
    )
    assert off.blocking == () and _loads(ptx_off) == 7
    # The jammed path: 6 planes' reads at (y, x) and 4 x 4 at the other faces, once each.
    assert _loads(ptx) == 7 * 4 + 6 + 4 * 4

    a = np.zeros(8, np.float32)

    def line(i):
        return a[min(i + 1, 7)] + a[i]

    ir = run_pipeline(check_and_lower(line, 1).ir, CompileOptions())
    assert WalkRows().rewrite(ir) is ir
