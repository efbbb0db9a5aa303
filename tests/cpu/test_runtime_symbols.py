"""A kernel whose loop trip count LLVM computes with 128-bit division must not crash.

numba 0.67-0.68 leave compiler-rt's ``__udivti3`` unresolved; the CPU backend resolves it
(offload/cpu/symbols.py). The kernel runs in a subprocess so that a regression shows as a
failed test, not as a crashed test run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.cpu

PROGRAM = textwrap.dedent(
    """
    import numpy as np
    import offload as ol

    def variable_step(i, j):
        s = 0
        for k in range(0, 12, j + 1):  # a step known only at run time, in a loop nest
            s += k
        return s

    print(ol.compute_s((2, 4), variable_step).tolist())
    print(ol.compute_p((2, 4), variable_step).tolist())
    """
)


def test_loop_with_a_run_time_step_inside_a_loop_nest_runs(tmp_path):
    script = tmp_path / "variable_step.py"
    script.write_text(PROGRAM)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    want = [[66, 30, 18, 12]] * 2
    assert done.stdout.split("\n")[:2] == [str(want), str(want)]


def test_int128_helpers_are_resolved_after_a_cpu_compile():
    import llvmlite.binding as llvm

    from offload.cpu.symbols import INT128_HELPERS, ensure_int128_helpers

    ensure_int128_helpers()
    assert all(llvm.address_of_symbol(name) for name in INT128_HELPERS)
