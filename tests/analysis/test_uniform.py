"""``offload.analysis.uniform``: which index axes a value may depend on. Sound (a result it
calls independent of an axis is the same all along that axis, by the interpreter) and
precise enough that a branch after a loop leaves the loop's counter uniform."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings

from offload.analysis.uniform import thread_dependence
from offload.ir.core import Return
from offload.ir.interp import evaluate
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from tests.strategies.programs import programs

pytestmark = pytest.mark.unit


def _ir(fn, rank=2):
    return run_pipeline(check_and_lower(fn, rank).ir, CompileOptions(verify=True))


def _loop_args(ir):
    """The arguments of the first loop header (the first block with arguments)."""
    return next(b for b in ir.blocks[1:] if b.args).args


def test_a_branch_after_the_loop_leaves_its_counter_uniform():
    a = np.ones((4, 9), np.float32)

    def f(i, j):
        acc = np.float32(0.0)
        for k in range(a.shape[1]):
            acc += a[i, k]
        if i < j:
            for k in range(j):
                acc -= a[i, k]
        return acc

    ir = _ir(f)
    deps = thread_dependence(ir)
    counter, acc = _loop_args(ir)[:2]
    assert deps[counter] == frozenset()
    assert deps[acc] == frozenset({0})
    (result,) = ir.blocks[-1].terminator.values
    assert deps[result] == frozenset({0, 1})


def test_a_branch_before_the_loop_makes_its_counter_depend_on_the_condition():
    a = np.ones((4, 9), np.float32)

    def f(i, j):
        n = 3
        if j > 1:
            n = 9
        acc = np.float32(0.0)
        for k in range(n):
            acc += a[i, k]
        return acc

    deps = thread_dependence(_ir(f))
    assert any(deps[v] == frozenset({1}) for v in deps if v.hint == "k")


def test_a_blocked_functions_copies_depend_on_their_axis():
    from offload.ptx.passes.jam import JamIndex

    a = np.ones((4, 9), np.float32)

    def f(i, j):
        return a[i, j] * np.float32(2)

    out = JamIndex((2, 3)).run(_ir(f))
    deps = thread_dependence(out)
    assert [deps[p] for p in out.index_params] == [frozenset({0})] * 2 + [frozenset({1})] * 3


@settings(max_examples=80, deadline=None)
@given(programs())
def test_results_independent_of_an_axis_are_the_same_along_it(case):
    fn, shape, caps = case
    ir = run_pipeline(fn, CompileOptions(verify=True))
    deps = thread_dependence(ir)
    values = {}
    for index in itertools.product(*(range(n) for n in shape)):
        try:
            values[index] = evaluate(ir, index, caps, max_steps=20_000)
        except Exception:  # an element's own error: nothing to compare there
            continue
    (ret,) = [b.terminator for b in ir.blocks if isinstance(b.terminator, Return)]
    for r, value in enumerate(ret.values):
        free = [a for a in range(len(shape)) if a not in deps[value]]
        for index, got in values.items():
            for axis in free:
                other = list(index)
                other[axis] = 0
                want = values.get(tuple(other))
                if want is None:
                    continue
                g, w = got[r], want[r]
                assert (g == w) or (np.isnan(g) and np.isnan(w)), (index, axis, g, w)
