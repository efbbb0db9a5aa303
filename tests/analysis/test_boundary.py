"""``offload.analysis.boundary``: which branch conditions are boundary tests along an axis
(comparisons of monotone functions of the index with values uniform along it, and their
Boolean combinations), and which are not (periodic, loaded, loop-carried)."""

from __future__ import annotations

import numpy as np
import pytest

from offload.analysis.boundary import BoundaryTests
from offload.analysis.uniform import thread_dependence
from offload.ir.core import Branch
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions

pytestmark = pytest.mark.unit

A = np.arange(40.0).reshape(5, 8)


def _conditions(fn, axis=0):
    """Whether the first branch's condition is a boundary test along ``axis`` (a loop's
    condition inside its arm depends on the axis through it: ``JamIndex.checked``)."""
    ir = run_pipeline(check_and_lower(fn, 2).ir, CompileOptions(verify=True))
    tests = BoundaryTests(ir, axis, thread_dependence(ir))
    return [tests.test(t.cond) for b in ir.blocks if isinstance(t := b.terminator, Branch)][:1]


def _halo(i, j):
    if i == 0 or j == 0 or i >= A.shape[0] - 1:
        return 0.0
    return A[i - 1, j] + A[i + 1, j]


def _interior(i, j):
    lo = min(2 * i - 1, 7) // 2
    if lo > 1 and -i + 3 < j:
        t = 0.0
        for k in range(j):
            t += A[i, k]
        return t
    return A[i, j]


def _parity(i, j):
    if i % 2 == 1:
        t = 0.0
        for k in range(j):
            t += A[i, k]
        return t
    return A[i, j]


def _loaded(i, j):
    if A[i, 0] > 8.0:
        t = 0.0
        for k in range(j):
            t += A[i, k]
        return t
    return A[i, j]


def _counted(i, j):
    t = 0.0
    for k in range(min(i, 3)):
        t += A[k, j]
    return t


@pytest.mark.parametrize("fn", [_halo, _interior])
def test_comparisons_of_monotone_indices_are_boundary_tests(fn):
    assert all(_conditions(fn))


@pytest.mark.parametrize("fn", [_parity, _loaded, _counted])
def test_periodic_loaded_and_loop_carried_conditions_are_not(fn):
    assert not all(_conditions(fn))


def test_a_condition_on_another_axis_is_uniform_along_this_one():
    def column(i, j):
        if j % 3 == 0:
            t = 0.0
            for k in range(j):
                t += A[i, k]
            return t
        return A[i, j]

    assert all(_conditions(column, axis=0))
    assert not all(_conditions(column, axis=1))
