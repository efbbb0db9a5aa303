"""A kernel specialised on small frozen weights (``Capture.value``), proved on its PTX:
the weights live in the constant bank, and the reads NVVM unrolls to constant offsets fold
into immediates, so the kernel loads the image only (the Table 3 "specialised" variant,
made from a plain element function). Without the contents, it loads the weights too."""

from __future__ import annotations

import dataclasses
import io
import re

import numpy as np
import pytest

import offload as ol
from offload.driver import specialise
from offload.ir.core import ConstArray
from offload.lowering import check_and_lower
from offload.options import CompileOptions
from offload.ptx.compile import compile_ptx
from offload.ptx.kernel_source import build_kernel_source
from tests.ptx.variants import kernel_ir

pytestmark = pytest.mark.ptx

img = np.ones((64, 48), dtype=np.float32)
weights = np.array([[2.0, -2.0, 3.0], [-1.0, 5.0, -1.0], [3.0, -2.0, 2.0]], dtype=np.float32)


def make_conv3(weights):
    """A 3x3 convolution over ``img`` with ``weights`` captured by closure."""

    def conv3(i, j):
        h, w = img.shape
        acc = np.float32(0.0)
        for a in range(3):
            yy = min(max(i + a - 1, 0), h - 1)
            for b in range(3):
                acc += weights[a, b] * img[yy, min(max(j + b - 1, 0), w - 1)]
        return acc

    return conv3


conv3 = make_conv3(weights)


def _ptx(pinned: bool) -> str:
    options = CompileOptions()
    consts = {1: ConstArray.of(weights)} if pinned else None
    ir = specialise(check_and_lower(conv3, 2), None, options, consts)
    assert [c.name for c in ir.captures] == ["img", "weights"]
    kir = kernel_ir(ir, options, 64, simulator=False)
    return compile_ptx(build_kernel_source(kir), "conv3", (9, 0))


def test_pinned_weights_fold_into_immediates():
    # The kernel walks 4 rows a thread (``offload.ptx.passes.walk``): the 4 elements'
    # 3 x 3 windows cover 6 rows of 3 taps, each read once.
    ptx = _ptx(pinned=True)
    assert len(re.findall(r"ld\.global\.f32", ptx)) == 6 * 3  # the image's taps only
    assert "0F40A00000" in ptx.upper()  # 5.0, the centre weight, as an immediate
    assert "ld.const" not in ptx  # every read folded


def test_without_contents_the_weights_are_loaded():
    ptx = _ptx(pinned=False)
    assert len(re.findall(r"ld\.global\.f32", ptx)) == 6 * 3 + 9  # once for the 4 rows


def test_without_walking_each_element_reads_its_window():
    options = CompileOptions(disabled_passes=frozenset({"walk"}))
    ir = specialise(check_and_lower(conv3, 2), None, options, {1: ConstArray.of(weights)})
    ptx = compile_ptx(build_kernel_source(kernel_ir(ir, options, 64, simulator=False)), "c", (9, 0))
    assert len(re.findall(r"ld\.global\.f32", ptx)) == 9


def test_the_kernel_source_binds_the_contents_once():
    options = CompileOptions()
    ir = specialise(check_and_lower(conv3, 2), None, options, {1: ConstArray.of(weights)})
    src = build_kernel_source(kernel_ir(ir, options, 64, simulator=False)).source
    assert src.count("cuda.const.array_like(OLC1)") == 1
    assert weights.tobytes().hex() in src
    # the pointer parameter stays: the launch is the same as the general kernel's
    general = build_kernel_source(dataclasses.replace(ir, captures=[
        dataclasses.replace(c, value=None) for c in ir.captures]))  # fmt: skip
    assert [p.name for p in general.params] == [
        p.name for p in build_kernel_source(kernel_ir(ir, options, 64, simulator=False)).params
    ]


def test_explain_shows_the_kernel_compute_g_would_run():
    conv3_frozen = make_conv3(ol.use(weights.copy()))
    text = ol.explain(conv3_frozen, (64, 48), target="gpu", file=io.StringIO())
    assert 'capture "weights" %weights.3: array<f32,2> = const(3x3)' in text
    assert "cuda.const.array_like(OLC1)" in text
    cpu = ol.explain(conv3_frozen, (64, 48), target="cpu", file=io.StringIO())
    assert "const(3x3)" not in cpu  # the CPU kernels are not specialised
