"""The walking kernel (``offload.ptx.passes.walk``) on its PTX: a thread computes four
neighbouring rows, and NVVM makes each read their windows share once -- a 5 x 5 window over
4 rows is 8 x 5 loads, not 4 x 25 -- while a function whose branches depend on the row is
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
from tests.corpus.walking import conv5, row_branch
from tests.ptx.variants import kernel_ir

pytestmark = pytest.mark.ptx


def _kernel(fn, options: CompileOptions = CompileOptions(), consts=None):
    ir = specialise(check_and_lower(fn, 2), None, options, consts)
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
    assert "min(np.int32(group * np.int32(4)), np.int32(nrows - np.int32(4)))" in src
    assert all(f"np.int32(ix0 + np.int32({c}))" in src for c in (1, 2, 3))


def test_a_branch_on_the_row_is_not_walked():
    kir, _ = _kernel(row_branch(64, 48).fn)
    assert kir.blocking == ()
    ir = run_pipeline(check_and_lower(row_branch(8, 8).fn, 2).ir, CompileOptions())
    assert not WalkRows().rewrite(ir).blocking


def test_only_rank_2_index_spaces_walk():
    import numpy as np

    a = np.zeros((4, 4, 4), np.float32)

    def three(z, y, x):
        return a[z, min(y + 1, 3), x] + a[z, y, x]

    ir = run_pipeline(check_and_lower(three, 3).ir, CompileOptions())
    assert WalkRows().rewrite(ir) is ir
