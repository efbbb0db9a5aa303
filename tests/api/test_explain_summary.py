"""``ol.explain`` starts with a summary and shows only the passes that changed the IR unless
``all_passes=True`` (issue 18 item 10)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import offload as ol
from offload.explain_summary import render

pytestmark = pytest.mark.cpu

A = np.arange(10.0)


def branchy(i):
    x = A[i]
    return x * 2.0 if x > 3 else -x


def test_the_summary_comes_first_and_unchanged_passes_are_left_out():
    short = ol.explain(branchy, 10, file=io.StringIO())
    full = ol.explain(branchy, 10, file=io.StringIO(), all_passes=True)
    lines = short.splitlines()
    assert lines[0] == "== summary: branchy over (10,) on cpu"
    assert lines[1].startswith("kernels: 1 (kernel (cpu-par)")
    assert "passes that changed the IR: select" in short
    assert "passes that changed nothing: " in short and "all_passes=True" in short
    assert "== IR after select" in short and "== IR after consts" not in short
    assert "== IR after consts" in full and "== CPU kernel source (cpu-par)" in short
    assert len(lines) * 4 < len(full.splitlines())


SECTIONS = [
    "== IR after lowering\nfunc @f {\n  %1 = add %0, %0  # f.py:1:1\n}",
    "== IR after fold\nfunc @f {\n  %1 = add %0, %0  # f.py:1:2\n}",
    "== IR after cse\nfunc @f {\n  %1 = mul %0, 2\n}",
    "== GPU kernel offload_f (variant unit32/lines: narrow) ==\nsource",
    "== resources (ptxas): num_regs=20, local_size_bytes=0, shared_size_bytes=0",
    "== launch for (10,): grid=(1, 1, 1) block=(32, 1, 1) blocks/SM=16 occupancy=100%",
]


@pytest.mark.unit
def test_render_reads_kernels_registers_launch_and_ignores_moved_locations():
    text = render(SECTIONS, "f", (10,), "gpu", all_passes=False)
    head = text.split("\n== IR after lowering")[0].splitlines()
    assert head == [
        "== summary: f over (10,) on gpu",
        "kernels: 1 (offload_f (variant unit32/lines: narrow))",
        "registers: 20 (ptxas); spills: 0 bytes; shared memory: 0 bytes",
        "launch: grid=(1, 1, 1) block=(32, 1, 1) blocks/SM=16 occupancy=100%",
        "passes that changed the IR: cse",
        "passes that changed nothing: fold (not shown; all_passes=True shows them)",
    ]
    assert "== IR after fold" not in text and "== IR after cse" in text
