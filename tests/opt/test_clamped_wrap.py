"""The divmod rule ``clamped-wrap``: the negative-index wrap of the clamp idiom
``min(max(x, 0), n - 1)`` is dropped -- proved by z3, applied only where its preconditions
hold, and the clamped stencil keeps its values."""

from __future__ import annotations

import numpy as np
import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.frontend.lower import fetch_captures
from offload.ir.interp import compute
from offload.ir.printer import print_function
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from tests.opt.golden import filecheck, run_text
from tests.strategies.programs import same_results

pytestmark = pytest.mark.unit


def _smin(a: z3.BitVecRef, b: z3.BitVecRef) -> z3.ExprRef:
    return z3.If(a < b, a, b)


def _counterexample(*facts: z3.BoolRef) -> bool:
    s = z3.Solver()
    s.add(*facts)
    return s.check() == z3.sat


def test_the_wrap_of_a_clamped_index_is_the_index_64bit():
    a, n = z3.BitVecs("a n", 64)
    i = _smin(a, n - 1)
    s = z3.Solver()
    s.add(a >= 0, n >= 0, z3.Not(z3.If(i < 0, i + n, i) == i))
    assert s.check() == z3.unsat


def test_the_wrap_is_needed_without_each_precondition():
    a, n = z3.BitVecs("a n", 64)
    for i, pre in ((_smin(a, n - 1), n >= 0), (_smin(a, n - 2), a >= 0), (_smin(a, n - 1), a >= 0)):
        assert _counterexample(pre, z3.If(i < 0, i + n, i) != i)


def _wrap_of(clamp: str) -> str:
    return (
        'func @f(index %i.0: i64, capture "a" %a.1: array<f64,1>) -> (f64) {\n^entry.0:\n'
        "  %z = const 0 : i64\n  %m1 = const -1 : i64\n  %m2 = const -2 : i64\n"
        "  %n = shape %a.1 {axis = 0} : i64\n  %top = add %n, %m1 : i64\n"
        "  %top2 = add %m2, %n : i64\n  %neg = add %i.0, %m2 : i64\n"
        "  %lo = max %neg, %z : i64\n"
        f"  %c = min {clamp} : i64\n"
        "  %t = lt %c, %z : bool\n  %w = add %c, %n : i64\n  %k = select %t, %w, %c : i64\n"
        "  %x = load %a.1, %k : f64\n  return %x\n}\n"
    )


@pytest.mark.parametrize("clamp", ["%lo, %top", "%top, %lo"])
def test_divmod_drops_the_wrap_of_the_clamp_idiom(clamp):
    out = run_text("divmod,dce", _wrap_of(clamp))
    filecheck(out, "CHECK-NOT: select\nCHECK: load %a.1, %c\n")


@pytest.mark.parametrize(
    "clamp",
    ["%neg, %top", "%lo, %top2", "%lo, %neg"],
    ids=["may_be_negative", "n_minus_2", "no_extent"],
)
def test_divmod_keeps_the_wrap_where_the_clamp_may_wrap(clamp):
    filecheck(run_text("divmod,dce", _wrap_of(clamp)), "CHECK: select\nCHECK: load %a.1, %k\n")


def _stencil(src: np.ndarray):
    def f(y, x):
        h = src.shape[0]
        w = src.shape[1]
        acc = 0.0
        for a in range(3):
            yy = min(max(y + a - 1, 0), h - 1)
            for b in range(3):
                xx = min(max(x + b - 1, 0), w - 1)
                acc += src[yy, xx] * (a + 2 * b)
        return acc

    return f


def test_the_clamped_stencil_loads_without_a_wrap():
    f = _stencil(np.zeros((4, 4)))
    out = print_function(run_pipeline(check_and_lower(f, 2).ir, CompileOptions()))
    assert "select" not in out, out


@settings(max_examples=25, deadline=None)
@given(h=st.integers(1, 6), w=st.integers(1, 6), n0=st.integers(1, 7), n1=st.integers(1, 7))
def test_the_clamped_stencil_keeps_its_values(h, w, n0, n1):
    src = np.random.default_rng(h * 7 + w).random((h, w))
    f = _stencil(src)
    low = check_and_lower(f, 2)
    caps = fetch_captures(f, low)
    opt = run_pipeline(low.ir, CompileOptions(verify=True))
    assert same_results(compute(low.ir, (n0, n1), caps), compute(opt, (n0, n1), caps))
