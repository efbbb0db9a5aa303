"""compute_p in a child forked after the parent ran compute_p: GNU OpenMP killed the child
("fork() called from a process already using GNU OpenMP"); now the child runs the
sequential kernel. Run in a subprocess so that a failure cannot take the runner down."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from tests.scripts import run_script

pytestmark = pytest.mark.cpu

SCRIPT = textwrap.dedent(
    """
    import os
    import numpy as np
    import offload as ol

    A = np.arange(10000.0)

    def f(i):
        return A[i] * 2.0

    assert ol.compute_p(10000, f).sum() == A.sum() * 2
    pid = os.fork()
    if pid == 0:
        ok = ol.compute_p(10000, f).sum() == A.sum() * 2
        os._exit(0 if ok else 3)
    _, status = os.waitpid(pid, 0)
    print("child", os.waitstatus_to_exitcode(status))
    assert ol.compute_p(10000, f).sum() == A.sum() * 2  # the parent keeps its threads
    """
)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_compute_p_in_a_child_forked_after_the_parent_used_it(tmp_path: Path) -> None:
    proc = run_script(tmp_path, "fork_child.py", SCRIPT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "child 0" in proc.stdout, (proc.stdout, proc.stderr[-2000:])
