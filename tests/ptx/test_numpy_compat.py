"""compute_g's kernels compile on NumPy 2.5, which removed ``np.row_stack`` (numba-cuda 0.30
registers an overload for it): ``offload.ptx.numba_compat``. NumPy 2.5 is simulated in a
fresh process by taking the alias out of a 2.x NumPy; the user's NumPy stays without it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.ptx

SCRIPT = textwrap.dedent(
    """
    import numpy as np
    if hasattr(np, "row_stack"):  # NumPy < 2.5: make it look like 2.5
        del np.row_stack
        if "row_stack" in np.__all__:
            np.__all__.remove("row_stack")
    {body}
    """
)


def _run(body: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT.format(body=body)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def test_a_kernel_compiles_to_ptx_on_a_numpy_without_row_stack():
    proc = _run(
        "from offload.ptx.compile import compile_ptx\n"
        "from offload.ptx.kernel_source import build_kernel_source\n"
        "from tests.ptx.irfixtures import saxpy_f32\n"
        "ptx = compile_ptx(build_kernel_source(saxpy_f32()), 'saxpy', (9, 0))\n"
        "assert '.entry' in ptx\n"
        "assert not hasattr(np, 'row_stack')  # the user's NumPy is left as it was\n"
        "print('ok')"
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_without_the_fix_numba_cuda_fails_on_that_numpy():
    # The reason for the fix: numba-cuda's own compile path touches np.row_stack.
    proc = _run(
        "from numba import cuda, float32\n"
        "def k(a):\n"
        "    a[0] = 1.0\n"
        "cuda.compile_ptx(k, (float32[:],), cc=(9, 0))\n"
    )
    assert proc.returncode != 0 and "row_stack" in proc.stderr
