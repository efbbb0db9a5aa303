"""The hoist pass (offload/opt/hoist.py): index-independent loops and transcendental calls
leave the element loop for a prologue run once per call.

Golden tests (IR text in, FileCheck patterns out), the rules that keep it exact (nothing
speculated, nothing hoisted under bounds_check or where it is not worth it), the printed
form's round trip, and the interpreter -- the specification -- running the prologue once
per call and giving the original's values.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from offload.ir import interp
from offload.ir.interp import compute
from offload.ir.parser import parse_function
from offload.ir.printer import print_function
from offload.ir.verifier import verify
from offload.lowering import check_and_lower
from offload.opt.hoist import HoistInvariants
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from tests.opt.golden import filecheck, run_text

pytestmark = pytest.mark.unit

TRACE_LOOP = """\
func @f(index %i.0: i64, index %j.1: i64, capture "a" %a.2: array<f64,2>) -> (f64) {
^entry.0:
  %x.3 = load %a.2, %i.0, %j.1 : f64
  %4 = const 0.0 : f64
  %5 = shape %a.2 {axis = 0} : i64
  %6 = const 0 : i64
  %7 = const 1 : i64
  br ^loop.1(%6, %4)
^loop.1(%k.8: i64, %t.9: f64):
  %10 = lt %k.8, %5 : bool
  condbr %10, ^body.2, ^exit.3
^body.2:
  %11 = load %a.2, %k.8, %k.8 : f64
  %12 = math %11 {fn = tanh} : f64
  %13 = add %t.9, %12 : f64
  %14 = add %k.8, %7 : i64
  br ^loop.1(%14, %13)
^exit.3:
  %15 = add %x.3, %t.9 : f64
  return %15
}
"""


def test_hoist_moves_an_index_independent_loop_into_the_prologue() -> None:
    out = run_text("hoist,dce,simplifycfg", TRACE_LOOP)
    filecheck(
        out,
        """\
        CHECK: func @f.prologue(index %_.0: i64, capture "a" %a.1: array<f64,2>) -> (f64) {
        CHECK: ^loop.1(%k.{{[0-9]+}}: i64, %t.{{[0-9]+}}: f64):
        CHECK: math {{.*}} {fn = tanh}
        CHECK: ^hoisted.{{[0-9]+}}:
        CHECK-NEXT: return %t.
        CHECK: func @f(index %i.0: i64, index %j.1: i64, capture "a" %a.2: array<f64,2>,
        CHECK-SAME: capture "hoisted t" %hoisted0.3: array<f64,1>) -> (f64) {
        CHECK-NEXT: ^hoisted.0:
        CHECK-NEXT: %x.4 = load %a.2, %i.0, %j.1 : f64
        CHECK-NEXT: %5 = const 0 : i64
        CHECK-NEXT: %t.6 = load %hoisted0.3, %5 : f64
        CHECK-NEXT: %7 = add %x.4, %t.6 : f64
        CHECK-NEXT: return %7
        CHECK-NEXT: }
        CHECK-NOT: tanh
        """,
    )


def test_the_split_prints_and_parses_back_to_the_same_text() -> None:
    out = run_text("hoist,dce", TRACE_LOOP)
    again = parse_function(out)
    verify(again)
    assert again.prologue is not None and again.hoisted == 1
    assert print_function(again) == out


def test_hoist_moves_a_transcendental_call_of_captured_scalars() -> None:
    src = """\
    func @f(index %i.0: i64, capture "a" %a.1: array<f64,1>, capture "s" %s.2: f64) -> (f64) {
    ^entry.0:
      %3 = math %s.2 {fn = exp} : f64
      %4 = load %a.1, %i.0 : f64
      %5 = mul %4, %3 : f64
      return %5
    }
    """
    filecheck(
        run_text("hoist,dce", src),
        """\
        CHECK: func @f.prologue
        CHECK: math %s.{{[0-9]+}} {fn = exp}
        CHECK: func @f(
        CHECK-NOT: math
        CHECK: mul
        """,
    )


def test_cheap_invariant_work_stays_in_the_element_function() -> None:
    src = """\
    func @f(index %i.0: i64, capture "a" %a.1: array<f64,1>, capture "s" %s.2: f64) -> (f64) {
    ^entry.0:
      %3 = math %s.2 {fn = sqrt} : f64
      %4 = mul %s.2, %3 : f64
      %5 = load %a.1, %i.0 : f64
      %6 = add %5, %4 : f64
      return %6
    }
    """
    out = run_text("hoist", src)
    assert "prologue" not in out and "math %s.2 {fn = sqrt}" in out


def test_a_loop_after_an_index_dependent_branch_is_not_hoisted() -> None:
    """The loop runs only for some elements: hoisting it would make reads they never make
    (a read out of bounds where no element reads)."""
    src = """\
    func @f(index %i.0: i64, capture "a" %a.1: array<f64,1>) -> (f64) {
    ^entry.0:
      %2 = const 0 : i64
      %3 = const 0.0 : f64
      %4 = gt %i.0, %2 : bool
      condbr %4, ^pre.1, ^done.4(%3)
    ^pre.1:
      %5 = shape %a.1 {axis = 0} : i64
      %6 = const 1 : i64
      br ^loop.2(%2, %3)
    ^loop.2(%k.7: i64, %t.8: f64):
      %9 = lt %k.7, %5 : bool
      condbr %9, ^body.3, ^done.4(%t.8)
    ^body.3:
      %10 = load %a.1, %k.7 : f64
      %11 = math %10 {fn = exp} : f64
      %12 = add %t.8, %11 : f64
      %13 = add %k.7, %6 : i64
      br ^loop.2(%13, %12)
    ^done.4(%r.14: f64):
      return %r.14
    }
    """
    assert "prologue" not in run_text("hoist", src)


def test_a_loop_carrying_an_index_dependent_value_is_not_hoisted() -> None:
    src = TRACE_LOOP.replace("br ^loop.1(%6, %4)", "br ^loop.1(%6, %x.3)").replace(
        "%15 = add %x.3, %t.9 : f64", "%15 = add %t.9, %t.9 : f64"
    )
    assert "prologue" not in run_text("hoist", src)


def test_hoist_does_not_run_with_bounds_check() -> None:
    assert "prologue" not in run_text("hoist", TRACE_LOOP, bounds_check=True)


a = np.linspace(-1.0, 1.0, 30).reshape(6, 5)
s = 0.75


def go_fast(i, j):
    trace = 0.0
    for k in range(a.shape[1]):
        trace += np.tanh(a[k, k])
    return a[i, j] + trace


def scaled(i):
    return a[i % 6, i % 5] * math.exp(s) + math.log1p(s)


def two_loops_and_a_branch(i, j):
    lo = a[0, 0]
    for k in range(a.shape[0]):
        lo = min(lo, a[k, 0])
    hi = 0.0
    for k in range(a.shape[1]):
        hi = max(hi, np.sin(a[0, k]))
    if a[i, j] > 0:
        return a[i, j] - lo
    return a[i, j] * hi


def first_index_dependent(i, j):
    x = a[i, j]
    n = 0
    while n < 5 and x > -2.0:
        x = x - 0.5
        n += 1
    trace = 0.0
    for k in range(a.shape[1]):
        trace += np.cos(a[k, k])
    return x + trace


@pytest.mark.parametrize(
    ("fn", "shape", "hoisted"),
    [
        (go_fast, (6, 5), 1),
        (scaled, (30,), 2),
        (two_loops_and_a_branch, (6, 5), 2),
        (first_index_dependent, (6, 5), 0),
    ],
    ids=lambda x: getattr(x, "__name__", str(x)),
)
def test_hoisted_function_gives_the_originals_values(fn, shape, hoisted) -> None:
    low = check_and_lower(fn, len(shape))
    options = CompileOptions(verify=True)
    out = run_pipeline(low.ir, options)
    assert out.hoisted == hoisted, print_function(out)
    (got,) = compute(out, shape, [a] if fn is not scaled else [a, s])
    want = np.array([fn(*idx) for idx in np.ndindex(*shape)]).reshape(shape)
    np.testing.assert_array_equal(got, want)


def test_the_interpreter_runs_the_prologue_once_per_call(monkeypatch) -> None:
    out = run_pipeline(check_and_lower(go_fast, 2).ir, CompileOptions(verify=True))
    assert out.prologue is not None
    runs: list[str] = []
    real = interp._Machine.run

    def counting(self, index):
        runs.append(self.fn.name)
        return real(self, index)

    monkeypatch.setattr(interp._Machine, "run", counting)
    compute(out, (6, 5), [a])
    assert runs.count("go_fast.prologue") == 1 and runs.count("go_fast") == 30
    runs.clear()
    compute(out, (0, 5), [a])
    assert runs == []  # no element: no prologue


def test_an_empty_index_space_runs_no_prologue_that_would_fault() -> None:
    """The prologue reads a[k, k] for k < 6, out of bounds of a 6x5 array at k = 5: every
    element would make that read, so a call with no element must not make it either."""

    def reads_past_the_end(i, j):
        t = 0.0
        for k in range(a.shape[0]):
            t += np.tanh(a[k, k])
        return a[i, j] + t

    out = run_pipeline(check_and_lower(reads_past_the_end, 2).ir, CompileOptions(verify=True))
    assert out.prologue is not None
    (got,) = compute(out, (0, 5), [a])
    assert got.shape == (0, 5)
    with pytest.raises(IndexError):
        compute(out, (1, 1), [a])


def test_the_pass_is_registered_and_last_in_the_default_pipeline() -> None:
    from offload.opt.registry import COMMON, DEFAULT_PIPELINE

    assert COMMON["hoist"] is HoistInvariants
    assert DEFAULT_PIPELINE.split(",")[-3:] == ["hoist", "dce", "simplifycfg"]
