"""The 32-bit kernel's index arithmetic reaches NVVM as ``nsw`` and loops walk pointers.

Without the no-signed-wrap fact every load of a counted loop sign-extends its 32-bit offset
(``mul.wide.s32``) per iteration, and NVVM cannot strength-reduce ``base + sext(t + k)*4``
into a pointer increment. With it (``narrow`` marks what it narrows, the GPU emitter calls
``offload.ptx.intrinsics``), the hot loops of a 1-D convolution and an n-body force sum
advance their pointers by ``add.s64`` -- as the 64-bit kernel's do -- while the user's own
``np.int32`` arithmetic, which must wrap, stays without the flag.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest

from offload.ir.core import Function
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.compile import compile_ptx, llvm_ir
from offload.ptx.kernel_source import KernelSource, build_kernel_source
from offload.ptx.passes.narrow import NarrowIndexArithmetic
from tests.corpus.loops import attraction, correlate
from tests.opt.golden import filecheck

pytestmark = pytest.mark.ptx

CC = (9, 0)

conv1d = correlate(np.zeros(1024, np.float32), np.ones(16, np.float32))
nbody = attraction(*(np.zeros(256, np.float32) for _ in range(3)))


base = np.int32(7)


def user_int32(i):
    return base * np.int32(i) + np.int32(1)


_FUNCTIONS = {"conv1d": conv1d, "nbody": nbody, "user_int32": user_int32}


@functools.cache
def _ir(name: str) -> Function:
    return run_pipeline(check_and_lower(_FUNCTIONS[name], 1).ir, CompileOptions())


@functools.cache
def _kernel(name: str, bits: int) -> KernelSource:
    fn = NarrowIndexArithmetic().run(_ir(name)) if bits == 32 else _ir(name)
    return build_kernel_source(fn, index_bits=bits)


@functools.cache
def _ptx(name: str, bits: int) -> str:
    return compile_ptx(_kernel(name, bits), name, CC)


def _innermost_loops(ptx: str) -> list[list[str]]:
    """The instructions of each loop whose body has no branch but its back edge."""
    lines = [ln.strip() for ln in ptx.splitlines()]
    labels = {ln[:-1]: k for k, ln in enumerate(lines) if re.fullmatch(r"\$L\w+:", ln)}
    loops = []
    for k, ln in enumerate(lines):
        m = re.fullmatch(r"(?:@!?%p\d+ )?bra(?:\.uni)?\s+(\$L\w+);", ln)
        if m is None or labels[m.group(1)] > k:
            continue
        body = [x for x in lines[labels[m.group(1)] + 1 : k + 1] if x and not x.startswith("//")]
        if not any(re.search(r"\bbra\b|^\$L", x) for x in body[:-1]):
            loops.append(body)
    return loops


def _hot_loop(ptx: str) -> list[str]:
    """The innermost loop with the most global loads."""
    return max(_innermost_loops(ptx), key=lambda body: _count(body, r"ld\.global"))


def _count(body: list[str], pattern: str) -> int:
    return sum(bool(re.match(pattern, x)) for x in body)


SIGN_EXTENSION = r"(mul\.wide\.s32|cvt\.s64\.s32)"


def test_narrowed_adds_and_offset_products_reach_nvvm_with_nsw():
    filecheck(
        llvm_ir(_kernel("conv1d", 32), "conv1d", CC),
        "CHECK: add nsw i32\nCHECK: mul nsw i32\n",
    )


def test_the_users_int32_arithmetic_is_emitted_wrapping():
    src = _kernel("user_int32", 32).source
    assert not re.search(r"\bnsw_\w+\(", src), src
    assert re.search(r"np\.int32\(\w+ \* \w+\)", src) and re.search(r"np\.int32\(\w+ \+ \w+\)", src)


def test_nbody_inner_loop_advances_pointers_without_sign_extension():
    body = _hot_loop(_ptx("nbody", 32))
    assert _count(body, r"ld\.global\.f32") >= 3, body
    assert _count(body, SIGN_EXTENSION) == 0, body
    assert _count(body, r"mul\.lo\.s32") == 0, body
    # every px[j], py[j], pz[j] address is the previous one plus a 64-bit step
    assert _count(body, r"add\.s64") >= _count(body, r"ld\.global\.f32"), body


def test_convolution_hot_loop_walks_pointers_and_is_as_short_as_the_64_bit_kernels():
    narrow, wide = _hot_loop(_ptx("conv1d", 32)), _hot_loop(_ptx("conv1d", 64))
    loads = _count(narrow, r"ld\.global\.f32")
    # Without nsw: two sign-extended offsets per four elements (one per array).
    assert 8 * _count(narrow, SIGN_EXTENSION) <= loads, narrow
    per_load = len(narrow) / loads
    wide_per_load = len(wide) / _count(wide, r"ld\.global\.f32")
    assert per_load <= 1.1 * wide_per_load, (per_load, wide_per_load)
