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
