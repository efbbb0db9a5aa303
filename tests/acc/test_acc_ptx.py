"""The stage kernels of a collective graph compile to PTX (no GPU needed): in
cross_target mode every target runs the GPU's tree, so a run on the CPU gives the
kernels the GPU would launch."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from offload.explain import explain_graph

pytestmark = pytest.mark.ptx


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def test_fold_all_stage_kernels_compile_to_ptx():
    x, y = np.random.rand(5000).astype(np.float32), np.random.rand(5000).astype(np.float32)
    saved = ol.config.determinism
    try:
        ol.config.determinism = "cross_target"
        text = explain_graph(ol.fold_all(add, 0.0, ol.zip_with(mul, x, y)), "gpu", "cpu-seq")
    finally:
        ol.config.determinism = saved
    kernels = text.split("== kernel ")[1:]
    assert [k.split(",")[0] for k in kernels] == [
        "1/3: fold stage: 1 row(s) x 79 partials of 64 (strided)",
        "2/3: fold stage: 1 row(s) x 2 partials of 40 (strided)",
        "3/3: result",
    ]
    for k in kernels:
        assert "== PTX" in k and ".visible .entry" in k
    assert "ld.global.f32" in kernels[0] or "ld.global.nc.f32" in kernels[0]


def first_nan_max(a, b):
    return b if a == a and (b > a or b != b) else a


@pytest.mark.parametrize(
    "make",
    [
        lambda x: ol.fold1(first_nan_max, x.reshape(2, -1)),  # contiguous partials
        lambda x: ol.fold_seg(add, 0.0, x, np.array([1000, 0, 4000])),  # lanes per segment
        lambda x: ol.stencil(lambda get: get(-1) + get(2), x, "mirror"),
        lambda x: ol.stencil(lambda get: get(-1) * get(1), x, ol.constant(1.0)),
    ],
    ids=["fold1-contiguous", "fold_seg-lanes", "stencil-mirror", "stencil-constant"],
)
def test_collective_kernels_compile_to_ptx(make):
    x = np.random.rand(5000)
    saved = ol.config.determinism
    try:
        ol.config.determinism = "cross_target"
        text = explain_graph(make(x), "gpu", "cpu-seq")
    finally:
        ol.config.determinism = saved
    kernels = text.split("== kernel ")[1:]
    assert kernels and all("== PTX" in k and ".visible .entry" in k for k in kernels)
