"""Issue 19 item 23: under ``parallel=True``, LLVM's loop vectoriser (numba 0.68, llvmlite
0.50, LLVM 22) miscompiles an unsigned division or remainder whose divisor is the same for
every iteration and which runs under a branch: the predicated ``udiv``/``urem`` is computed
for the vector's first lane only and the other lanes get ``poison``, so the loads that use
it read garbage or segfault. Plain numba, no offload::

    @numba.njit(parallel=True)
    def k(n, out, a):
        for i in numba.prange(n):
            x = 0.0
            if i != 0:
                x = a[np.uint64(5) % np.uint64(a.shape[0])]   # or // : garbage in lanes 1-3
            out[i] = x

The sequential loop (``parallel=False``) and numba's ``LOOP_VECTORIZE=0`` are both right.
offload compiles a ``cpu-par`` kernel that divides by a run-time divisor outside its entry
block without loop vectorisation (``offload.emit.division.divides_under_a_branch``). Each
case runs in a subprocess (a segfault must not take pytest down)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.scripts import run_script

pytestmark = pytest.mark.cpu

OFFLOAD = textwrap.dedent(
    """
    import numpy as np
    import offload as ol

    A = np.arange(56.0)

    def rem(i):
        x = 0.0
        if i:
            x = A[5 % len(A)]
        return x

    def div(i):
        x = 0.0
        if i:
            x = A[285 // len(A)]
        return x

    for compute in (ol.compute_p, ol.compute_s):
        assert (compute((56,), rem) == [0.0] + [5.0] * 55).all()
        assert (compute((56,), div) == [0.0] + [5.0] * 55).all()
    assert (ol.compute_p((56,), lambda i: A[(i * 7) % len(A)]) == (np.arange(56) * 7) % 56).all()
    """
)

NUMBA = textwrap.dedent(
    """
    import numba
    import numpy as np

    @numba.njit(parallel=True)
    def k(n, out, a):
        for i in numba.prange(n):
            x = 0.0
            if i != 0:
                x = a[np.uint64(285) // np.uint64(a.shape[0])]
            out[i] = x

    A = np.arange(56.0)
    out = np.empty(56)
    k(56, out, A)
    assert (out == [0.0] + [5.0] * 55).all(), out[:8]
    """
)


def test_invariant_division_under_a_branch_in_a_parallel_kernel_is_right(tmp_path: Path) -> None:
    proc = run_script(tmp_path, "udiv_branch.py", OFFLOAD)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_parallel_kernel_with_such_a_division_is_not_loop_vectorised() -> None:
    from offload.emit.division import divides_under_a_branch
    from offload.lowering import check_and_lower
    from offload.opt.manager import run_pipeline
    from offload.options import CompileOptions

    a = np.arange(56.0)

    def guarded(i: int) -> float:
        return a[5 % len(a)] if i else 0.0

    def unguarded(i: int) -> float:
        return a[i % len(a)] + a[(i * 3) // 7]  # entry block only; constant divisor

    def optimised(fn: object) -> object:
        return run_pipeline(check_and_lower(fn, 1).ir, CompileOptions())

    assert divides_under_a_branch(optimised(guarded))  # type: ignore[arg-type]
    assert not divides_under_a_branch(optimised(unguarded))  # type: ignore[arg-type]


@pytest.mark.xfail(
    strict=False,
    reason="upstream LLVM vectoriser bug (numba 0.68 / llvmlite 0.50 / LLVM 22), on the "
    "hosts whose vector width the vectoriser picks for it (seen on the CI VMs of 2026-11; "
    "a znver3 AVX2 host of 2026-12-07 computed the right values)",
)
def test_upstream_numba_parallel_loop_with_invariant_udiv_under_a_branch(tmp_path: Path) -> None:
    # Not strict: whether the poisoned lanes read garbage depends on the host CPU. The
    # workaround's own test above is the check that must pass everywhere.
    proc = run_script(tmp_path, "numba_udiv.py", NUMBA)
    assert proc.returncode == 0, proc.stderr[-2000:]
