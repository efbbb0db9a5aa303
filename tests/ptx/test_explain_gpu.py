"""``ol.explain(target="gpu")`` prints the pipeline that actually runs: the common passes,
then the kernel variant's own passes (narrow, staging, blocking ...), then its kernel and
PTX; ``ol.config.dump`` prints the same passes and kernels while compiling."""

from __future__ import annotations

import io

import numpy as np
import pytest

import offload as ol

pytestmark = pytest.mark.ptx

m = np.arange(64, dtype=np.float32).reshape(8, 8)


def product(i, j):
    s = np.float32(0.0)
    for k in range(8):
        s += m[i, k] * m[k, j]
    return s


def test_explain_gpu_shows_the_variant_pipeline_and_its_kernel():
    full = ol.explain(product, (8, 8), target="gpu", file=io.StringIO(), all_passes=True)
    summary, text = full.split("\n== IR after lowering", 1)
    assert summary.startswith("== summary: product over (8, 8) on gpu")
    assert "variant unit32/8x8" in summary and "registers: " in summary
    order = [
        "== IR after simplifycfg",
        "== IR after narrow (GPU kernel pipeline)",
        "== IR after jam{factors=8x8} (GPU kernel pipeline)",
        "== IR after stage (GPU kernel pipeline)",
        "== IR after early_loads (GPU kernel pipeline)",
        "variant unit32/8x8",
        "== PTX ==",
    ]
    positions = [text.find(s) for s in order]
    assert -1 not in positions and positions == sorted(positions), positions


def test_explain_gpu_follows_disabled_passes():
    saved = ol.config.disabled_passes
    try:
        ol.config.disabled_passes = frozenset({"jam", "early_loads"})
        text = ol.explain(product, (8, 8), target="gpu", file=io.StringIO(), all_passes=True)
    finally:
        ol.config.disabled_passes = saved
    assert "IR after stage (GPU kernel pipeline)" in text
    assert "jam" not in text.split("== IR after narrow")[1].split("== GPU kernel")[0]
    assert "IR after early_loads" not in text and "variant unit32/tiles" in text


@pytest.mark.cpu
def test_config_dump_prints_the_ir_after_every_pass_and_the_kernel_source(capsys):
    def twice(i):
        return m[i % 8, 0] * 2

    saved = ol.config.dump
    try:
        ol.config.dump = frozenset({"ir", "source"})
        ol.compute_s(4, twice)
    finally:
        ol.config.dump = saved
    out = capsys.readouterr().out
    assert "// IR after fold" in out and "// IR after divmod" in out
    assert "// kernel source of twice (cpu-seq)" in out and "def kernel(" in out
