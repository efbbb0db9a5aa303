"""The 32-bit kernel on the PTX it produces (no GPU needed): a clamped 5x5 stencil's index
work leaves 64-bit arithmetic.

The 64-bit kernel of the same optimised IR is the baseline. What remains 64-bit in the
32-bit kernel is address formation (a pointer plus a sign-extended offset: ``mul.wide.s32``
and ``add.s64``), never multiplies, minima/maxima, comparisons or divisions.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest

from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.compile import compile_ptx
from offload.ptx.kernel_source import build_kernel_source
from offload.ptx.passes.narrow import NarrowIndexArithmetic

pytestmark = pytest.mark.ptx

src = np.zeros((64, 64), np.float32)
weights = np.ones((5, 5), np.float32)


def conv5(y, x):
    h = src.shape[0]
    w = src.shape[1]
    acc = np.float32(0.0)
    for a in range(5):
        yy = min(max(y + a - 2, 0), h - 1)
        for b in range(5):
            xx = min(max(x + b - 2, 0), w - 1)
            acc += weights[a, b] * src[yy, xx]
    return acc


def plane(t):
    n = src.shape[0]  # a run-time divisor: a real division, not a multiply by a constant
    return t % n * 3 // 2 + t // (n + 9)


@functools.cache
def _ptx(name: str, bits: int) -> str:
    fn = {"conv5": (conv5, 2), "plane": (plane, 1)}[name]
    ir = run_pipeline(check_and_lower(*fn).ir, CompileOptions())
    if bits == 32:
        ir = NarrowIndexArithmetic().run(ir)
    return compile_ptx(build_kernel_source(ir, index_bits=bits), name, (9, 0))


def _count(ptx: str, pattern: str) -> int:
    return len(re.findall(pattern, ptx))


def _instructions(ptx: str) -> int:
    body = ptx[ptx.index("{") :]
    return sum(
        1
        for ln in body.splitlines()
        if ln.strip() and not ln.strip().startswith(("//", ".", "{", "}", "$", "@%p"))
    )


def test_stencil_index_work_has_no_64_bit_multiplies_minima_or_compares():
    wide, narrow = _ptx("conv5", 64), _ptx("conv5", 32)
    for op in (r"mul\.lo\.s64", r"min\.s64", r"max\.s64", r"setp\.\w+\.s64"):
        assert _count(wide, op) > 0, op
        assert _count(narrow, op) == 0, op


def _int64_instructions(ptx: str) -> int:
    return len(re.findall(r"^\s+[a-z]+(?:\.[a-z0-9]+)*\.[su]64\s", ptx, re.M))


def test_stencil_kernel_does_a_third_of_the_64_bit_integer_work_in_32_bits():
    # NVVM unrolls both kernels' tap loops fully (the clamp's wrap select is gone: divmod's
    # clamped-wrap), so their lengths are alike (~290 instructions); what narrowing saves
    # is 64-bit integer work, two or more SASS instructions each: 148 -> 56, the 50 left
    # being address formation.
    wide, narrow = _ptx("conv5", 64), _ptx("conv5", 32)
    assert _int64_instructions(narrow) < 0.5 * _int64_instructions(wide), (
        _int64_instructions(narrow),
        _int64_instructions(wide),
    )
    assert _instructions(narrow) <= _instructions(wide)


def test_clamped_indices_form_32_bit_offsets_in_the_kernel_source():
    ir = NarrowIndexArithmetic().run(run_pipeline(check_and_lower(conv5, 2).ir, CompileOptions()))
    src = build_kernel_source(ir, index_bits=32).source
    assert re.search(r"cap0\[nsw_add_i32\(nsw_mul_i32\(\w+, cap0s0\), nsw_mul_i32\(", src)


def test_index_division_is_32_bit():
    wide, narrow = _ptx("plane", 64), _ptx("plane", 32)
    assert _count(wide, r"(div|rem)\.[su]64") > 0
    assert _count(narrow, r"(div|rem)\.[su]64") == 0
