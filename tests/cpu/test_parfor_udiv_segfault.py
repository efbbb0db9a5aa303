"""Issue 19 item 23, still open: LLVM's loop vectoriser (llvmlite 0.50, LLVM 22) predicates
a loop-invariant unsigned division under a branch on the vector's first lane only and feeds
``poison`` to the other lanes' gather addresses, so this cpu-par kernel segfaults. Run in a
subprocess; strict xfail, so that the day it passes this test says to drop the marker."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.scripts import run_script

pytestmark = pytest.mark.cpu

SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import offload as ol

    A = np.arange(56.0)

    def f(i):
        x = 0.0
        if i:
            x = A[5 % len(A)]
        return x

    assert (ol.compute_p((56,), f) == [0.0] + [5.0] * 55).all()
    """
)


@pytest.mark.xfail(strict=True, reason="LLVM vectoriser bug: uniform udiv predicated on lane 0")
def test_invariant_modulo_under_a_branch_in_a_parallel_loop(tmp_path: Path) -> None:
    proc = run_script(tmp_path, "udiv_branch.py", SCRIPT)
    assert proc.returncode == 0, proc.stderr[-2000:]
