"""Branch merging looks ahead when the arms' heads differ (the paper's §4.2 walk, done
properly): the arms fall back in step after the unmatched ops, independent ops pair out of
order, the mismatch threshold still counts every op emitted alone, and a load only one arm
performs is never speculated to get back in step."""

from __future__ import annotations

import numpy as np
import pytest

from offload.ir.interp import compute
from offload.ir.parser import parse_function
from tests.opt.golden import filecheck, run_text

pytestmark = pytest.mark.unit

HF = 'func @f(index %i.0: i64, capture "x" %x.1: array<f64,1>) -> (f64) {\n^entry.0:\n'

# then: k = 1 / (1 - c*d) ...; else: k = 1 / (c*d + 1) ...; else ends with one more op.
PAPER_CND = (
    HF
    + """\
  %d = load %x.1, %i.0 : f64
  %z = const 0.0 : f64
  %neg = lt %d, %z : bool
  condbr %neg, ^then.1, ^else.2
^then.1:
  %c = const 0.25 : f64
  %one = const 1.0 : f64
  %m = mul %d, %c : f64
  %s = sub %one, %m : f64
  %k = truediv %one, %s : f64
  %k2 = mul %k, %k : f64
  %k3 = add %k2, %c : f64
  %r = mul %k3, %k : f64
  br ^join.3(%r)
^else.2:
  %c2 = const 0.25 : f64
  %one2 = const 1.0 : f64
  %m2 = mul %d, %c2 : f64
  %a2 = add %m2, %one2 : f64
  %k4 = truediv %one2, %a2 : f64
  %k5 = mul %k4, %k4 : f64
  %k6 = add %k5, %c2 : f64
  %r2 = mul %k6, %k4 : f64
  %r3 = sub %one2, %r2 : f64
  br ^join.3(%r3)
^join.3(%out: f64):
  return %out
}
"""
)


def _agree(src: str, out: str) -> None:
    xs = np.array([-3.0, -0.5, 0.0, 0.5, 2.0])
    want = compute(parse_function(src), xs.shape, [xs])
    got = compute(parse_function(out), xs.shape, [xs])
    for w, g in zip(want, got, strict=True):
        assert np.array_equal(w, g), (w, g)


def test_arms_differing_in_sub_against_add_fall_back_in_step_after_two_unmatched_ops() -> None:
    # sub and add are emitted alone, the truedivs pair over a select, the rest pairs, and the
    # else arm's final sub is alone: 3 mismatches.
    out = run_text("select,cse,dce", PAPER_CND, select_threshold=3)
    filecheck(
        out,
        """\
        CHECK-NOT: condbr
        CHECK: %[[S:.*]] = sub
        CHECK: %[[A:.*]] = add
        CHECK: %[[Q:.*]] = select %{{.*}}, %[[S]], %[[A]] : f64
        CHECK: truediv %{{.*}}, %[[Q]] : f64
        CHECK-NOT: truediv
        """,
    )
    _agree(PAPER_CND, out)


def test_lookahead_still_counts_every_op_emitted_alone_against_the_threshold() -> None:
    filecheck(run_text("select", PAPER_CND, select_threshold=2), "CHECK: condbr\n")


def test_independent_ops_in_a_different_order_pair_without_a_mismatch() -> None:
    src = (
        HF
        + """\
  %d = load %x.1, %i.0 : f64
  %z = const 0.0 : f64
  %neg = lt %d, %z : bool
  condbr %neg, ^then.1, ^else.2
^then.1:
  %sq = mul %d, %d : f64
  %c = const 2.0 : f64
  %e = math %d {fn = exp} : f64
  %t = add %sq, %c : f64
  %r = sub %t, %e : f64
  br ^join.3(%r)
^else.2:
  %c2 = const 3.0 : f64
  %t2 = add %d, %c2 : f64
  %e2 = math %d {fn = exp} : f64
  %sq2 = mul %d, %d : f64
  %r2 = sub %t2, %e2 : f64
  br ^join.3(%r2)
^join.3(%out: f64):
  return %out
}
"""
    )
    # then: mul, exp, add; else: add, exp, mul. The exps and the muls pair out of order
    # (neither uses the ops it is moved past); the adds differ in an operand (a select).
    out = run_text("select,cse,dce", src, select_threshold=0)
    filecheck(
        out,
        "CHECK-NOT: condbr\nCHECK: mul %d\nCHECK-NOT: mul\nCHECK: math\nCHECK-NOT: math\n",
    )
    _agree(src, out)


def test_lookahead_never_skips_a_load_only_one_arm_performs() -> None:
    src = """\
func @f(index %i.0: i64, capture "a" %a.1: array<f64,1>) -> (f64) {
^entry.0:
  %z = const 0 : i64
  %pos = gt %i.0, %z : bool
  condbr %pos, ^then.1, ^else.2
^then.1:
  %one = const 1 : i64
  %j = sub %i.0, %one : i64
  %v = load %a.1, %j : f64
  %two = const 2.0 : f64
  %w = mul %v, %two : f64
  br ^join.3(%w)
^else.2:
  %two2 = const 2.0 : f64
  %u = cast %i.0 : f64
  %w2 = mul %u, %two2 : f64
  br ^join.3(%w2)
^join.3(%out: f64):
  return %out
}
"""
    filecheck(run_text("select", src, select_threshold=8), "CHECK: condbr\nCHECK: load\n")


def test_a_uniform_branch_is_never_merged_and_survives_printing_and_cloning() -> None:
    """``condbr ... uniform`` (a stencil's interior test: ``Branch.uniform``) stays a
    branch whatever the threshold, through the printer and parser, the whole pipeline
    and a clone; the same arms without the mark merge."""
    from offload.ir.clone import clone_function
    from offload.ir.core import Branch
    from offload.ir.printer import print_function

    src = (
        HF
        + """\
  %z = const 0 : i64
  %pos = gt %i.0, %z : bool
  condbr %pos, ^then.1, ^else.2 uniform
^then.1:
  %one = const 1 : i64
  %j = sub %i.0, %one : i64
  %a = load %x.1, %j : f64
  br ^join.3(%a)
^else.2:
  %b = load %x.1, %i.0 : f64
  br ^join.3(%b)
^join.3(%out: f64):
  return %out
}
"""
    )
    fn = parse_function(src)
    branch = fn.entry.terminator
    assert isinstance(branch, Branch) and branch.uniform
    assert "uniform" in print_function(clone_function(fn))
    full = "consts,fold,divmod,simplifycfg,select,hoist,cse,licm,copyprop,dce,unroll"
    for pipeline in ("select", full):
        filecheck(run_text(pipeline, src, select_threshold=99), "CHECK: condbr {{.*}} uniform\n")
    filecheck(
        run_text("select", src.replace(" uniform", ""), select_threshold=99), "CHECK-NOT: condbr\n"
    )
    _agree(src, run_text(full, src))
