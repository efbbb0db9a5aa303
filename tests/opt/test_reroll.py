"""The ``reroll`` pass (GPU kernels that are blocked): an unrolled loop's copy goes and its
original runs every iteration, with the same values (interpreter), and nothing else moves."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from offload.frontend.lower import fetch_captures
from offload.ir.interp import compute
from offload.ir.printer import print_function
from offload.ir.verifier import verify
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.opt.util import natural_loops
from offload.options import CompileOptions
from offload.ptx.passes.reroll import Reroll
from tests.corpus.staged import CASES, StagedCase
from tests.opt.golden import filecheck
from tests.strategies.programs import programs, same_results

pytestmark = pytest.mark.unit


def _optimised(fn, rank=2, **kw):
    return run_pipeline(check_and_lower(fn, rank).ir, CompileOptions(verify=True, **kw))


_A = np.ones((3, 50), np.float32)


def _dot(i, j):
    acc = np.float32(0.0)
    for k in range(_A.shape[1]):
        acc += _A[i, k] * _A[j, k]
    return acc


def _marked(fn):
    return [op for op in fn.ops() if op.attrs.get("unrolled")]


def _rerolled(ir):
    before = print_function(ir)
    out = Reroll().run(ir)
    verify(out)
    assert print_function(ir) == before, "the pass mutated the IR it was handed"
    return out


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_the_unrolled_copy_goes_and_the_values_stay(case: StagedCase):
    ir = _optimised(case.fn)
    caps = fetch_captures(case.fn, check_and_lower(case.fn, 2))
    out = _rerolled(ir)
    assert not _marked(out)
    assert len(natural_loops(out)) == len(natural_loops(ir)) - len(_marked(ir))
    assert same_results(compute(ir, case.shape, caps), compute(out, case.shape, caps))


def test_golden_rerolled_dot_enters_the_original_loop():
    ir = _optimised(_dot)
    assert len(_marked(ir)) == 1, "unroll marks the loop test of the copy it makes"
    out = _rerolled(ir)
    filecheck(
        print_function(out),
        """
        CHECK: ^entry
        CHECK-NOT: ^unroll
        CHECK: br ^loop.{{[0-9]+}}(
        CHECK-NOT: ^unroll
        CHECK: ^loop
        CHECK: load %_A
        CHECK: load %_A
        CHECK-NOT: load
        CHECK: return
        """,
    )


def test_without_unroll_there_is_nothing_to_do():
    ir = _optimised(_dot, disabled_passes=frozenset({"unroll"}))
    assert print_function(_rerolled(ir)) == print_function(ir)


def test_a_loop_test_that_lost_its_shape_is_left_alone():
    ir = _optimised(_dot)
    (test,) = _marked(ir)
    header = next(b for b in ir.blocks if test in b.ops)
    zero = next(
        op.result
        for op in ir.entry.ops
        if op.attrs.get("value") == 0 and op.result.type == header.args[0].type
    )
    header.terminator.else_args[0] = zero  # the counter is no longer passed on unchanged
    assert _marked(_rerolled(ir))


@settings(max_examples=60, deadline=None)
@given(programs())
def test_random_programs_keep_their_values(case):
    fn, shape, caps = case
    ir = run_pipeline(fn, CompileOptions(verify=True))
    out = _rerolled(ir)
    assert not _marked(out)
    try:
        expected = compute(ir, shape, caps, max_steps=20_000)
    except Exception as err:  # the original's own error (a bad index, a step limit)
        with pytest.raises(type(err)):
            compute(out, shape, caps, max_steps=20_000)
        return
    assert same_results(expected, compute(out, shape, caps, max_steps=20_000))
