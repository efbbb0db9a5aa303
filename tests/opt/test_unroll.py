"""The ``unroll`` pass: golden IR for the loops it unrolls and the ones it leaves alone, and
interpreter results (and faults) identical before and after, on chosen and random inputs."""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.analysis.ranges import RangeFacts
from offload.ir.core import Function
from offload.ir.interp import StepLimitExceeded, compute
from offload.ir.parser import parse_function
from offload.ir.printer import print_function
from offload.ir.verifier import verify
from offload.opt.manager import run_pipeline
from offload.opt.unroll import Unroll
from offload.options import CompileOptions
from tests.opt.golden import filecheck
from tests.strategies.programs import programs, same_results

pytestmark = pytest.mark.unit

I64_MIN, I64_MAX = -(2**63), 2**63 - 1

# for k in range(p, len(vals), 3): acc += vals[k]
CONST_STEP = """\
func @const_step(index %p.0: i64, capture "vals" %vals.1: array<f64,1>) -> (f64) {
^entry.0:
  %2 = const 0.0 : f64
  %3 = shape %vals.1 {axis = 0} : i64
  %4 = const 3 : i64
  br ^loop.1(%p.0, %2)
^loop.1(%k.5: i64, %acc.6: f64):
  %7 = lt %k.5, %3 : bool
  condbr %7, ^body.2, ^exit.3
^body.2:
  %8 = load %vals.1, %k.5 : f64
  %9 = add %acc.6, %8 : f64
  %10 = add %k.5, %4 : i64
  br ^loop.1(%10, %9)
^exit.3:
  return %acc.6
}
"""

# for k in range(p, len(x), p1): acc += x[k] * y[k]   (p1 a captured int, x and y f32)
PARTIAL_DOT = """\
func @partial_dot(index %p.0: i64, capture "x" %x.1: array<f32,1>, capture "p1" %p1.2: i64, \
capture "y" %y.3: array<f32,1>) -> (f32) {
^entry.0:
  %4 = const 0.0 : f32
  %5 = shape %x.1 {axis = 0} : i64
  %6 = const 0 : i64
  %7 = gt %p1.2, %6 : bool
  %8 = shape %y.3 {axis = 0} : i64
  br ^loop.1(%p.0, %4)
^loop.1(%k.9: i64, %acc.10: f32):
  %11 = lt %k.9, %5 : bool
  %12 = gt %k.9, %5 : bool
  %13 = select %7, %11, %12 : bool
  condbr %13, ^body.2, ^exit.3
^body.2:
  %14 = lt %k.9, %6 : bool
  %15 = add %k.9, %5 : i64
  %16 = select %14, %15, %k.9 : i64
  %17 = load %x.1, %16 : f32
  %18 = add %k.9, %8 : i64
  %19 = select %14, %18, %k.9 : i64
  %20 = load %y.3, %19 : f32
  %21 = mul %17, %20 : f32
  %22 = add %acc.10, %21 : f32
  %23 = add %k.9, %p1.2 : i64
  br ^loop.1(%23, %22)
^exit.3:
  return %acc.10
}
"""

# for k in range(rp[i], rp[i + 1]): acc += vals[k]   (rp an int32 array)
CSR_ROW = """\
func @csr_row(index %i.0: i64, capture "rp" %rp.1: array<i32,1>, \
capture "vals" %vals.2: array<f64,1>) -> (f64) {
^entry.0:
  %3 = const 0.0 : f64
  %4 = load %rp.1, %i.0 : i32
  %5 = const 1 : i64
  %6 = add %i.0, %5 : i64
  %7 = load %rp.1, %6 : i32
  %8 = cast %4 : i64
  %9 = cast %7 : i64
  %10 = shape %vals.2 {axis = 0} : i64
  %11 = const 0 : i64
  br ^loop.1(%8, %3)
^loop.1(%k.12: i64, %acc.13: f64):
  %14 = lt %k.12, %9 : bool
  condbr %14, ^body.2, ^exit.3
^body.2:
  %15 = lt %k.12, %11 : bool
  %16 = add %k.12, %10 : i64
  %17 = select %15, %16, %k.12 : i64
  %18 = load %vals.2, %17 : f64
  %19 = add %acc.13, %18 : f64
  %20 = add %k.12, %5 : i64
  br ^loop.1(%20, %19)
^exit.3:
  return %acc.13
}
"""

# for k in range(a.shape[1]): acc += a[i, k] * bt[j, k]
MATMUL = """\
func @matmul(index %i.0: i64, index %j.1: i64, capture "a" %a.2: array<f32,2>, \
capture "bt" %bt.3: array<f32,2>) -> (f32) {
^entry.0:
  %4 = const 0.0 : f32
  %5 = shape %a.2 {axis = 1} : i64
  %6 = const 0 : i64
  %7 = const 1 : i64
  br ^loop.1(%6, %4)
^loop.1(%k.8: i64, %acc.9: f32):
  %10 = lt %k.8, %5 : bool
  condbr %10, ^body.2, ^exit.3
^body.2:
  %11 = load %a.2, %i.0, %k.8 : f32
  %12 = load %bt.3, %j.1, %k.8 : f32
  %13 = mul %11, %12 : f32
  %14 = add %acc.9, %13 : f32
  %15 = add %k.8, %7 : i64
  br ^loop.1(%15, %14)
^exit.3:
  return %acc.9
}
"""

# acc = 0; for j in range(i + 1): for k in range(j, len(vals)): acc += vals[k] * j
NESTED = """\
func @nested(index %i.0: i64, capture "vals" %vals.1: array<f64,1>) -> (f64) {
^entry.0:
  %2 = const 0.0 : f64
  %3 = const 1 : i64
  %4 = add %i.0, %3 : i64
  %5 = const 0 : i64
  %6 = shape %vals.1 {axis = 0} : i64
  br ^loop.1(%5, %2)
^loop.1(%j.7: i64, %acc.8: f64):
  %9 = lt %j.7, %4 : bool
  condbr %9, ^body.2, ^exit.3
^body.2:
  %10 = cast %j.7 : f64
  br ^loop.4(%j.7, %acc.8)
^exit.3:
  return %acc.8
^loop.4(%k.11: i64, %acc.12: f64):
  %13 = lt %k.11, %6 : bool
  condbr %13, ^body.5, ^exit.6
^body.5:
  %14 = load %vals.1, %k.11 : f64
  %15 = mul %14, %10 : f64
  %16 = add %acc.12, %15 : f64
  %17 = add %k.11, %3 : i64
  br ^loop.4(%17, %16)
^exit.6:
  %18 = add %j.7, %3 : i64
  br ^loop.1(%18, %acc.12)
}
"""

# for k in range(lo + i, n, s) with lo, n, s captured; the index is masked so that no
# load faults, and h = h * 31 + k records the exact sequence of k (wrapping).
GENERAL = """\
func @general(index %i.0: i64, capture "x" %x.1: array<f64,1>, capture "lo" %lo.2: i64, \
capture "n" %n.3: i64, capture "s" %s.4: i64) -> (f64, i64) {
^entry.0:
  %5 = const 0.0 : f64
  %6 = const 0 : i64
  %7 = gt %s.4, %6 : bool
  %8 = const 15 : i64
  %9 = const 31 : i64
  %10 = add %lo.2, %i.0 : i64
  br ^loop.1(%10, %5, %6)
^loop.1(%k.11: i64, %acc.12: f64, %h.13: i64):
  %14 = lt %k.11, %n.3 : bool
  %15 = gt %k.11, %n.3 : bool
  %16 = select %7, %14, %15 : bool
  condbr %16, ^body.2, ^exit.3
^body.2:
  %17 = and %k.11, %8 : i64
  %18 = load %x.1, %17 : f64
  %19 = add %acc.12, %18 : f64
  %20 = mul %h.13, %9 : i64
  %21 = add %20, %k.11 : i64
  %22 = add %k.11, %s.4 : i64
  br ^loop.1(%22, %19, %21)
^exit.3:
  return %acc.12, %h.13
}
"""


def _unrolled(text: str, factor: int = 4) -> tuple[Function, Function]:
    """The parsed function and the pass's (verified) output; the input is left untouched."""
    fn = parse_function(textwrap.dedent(text))
    verify(fn)
    before = print_function(fn)
    out = Unroll(factor=factor).run(fn)
    verify(out)
    assert print_function(fn) == before, "the pass mutated the IR it was handed"
    return fn, out


def _outcome(fn: Function, shape: tuple[int, ...], captures: list[Any], steps: int) -> object:
    """The interpreter's results, or the type of the error it stopped with."""
    try:
        return compute(fn, shape, captures, max_steps=steps)
    except (IndexError, StepLimitExceeded) as err:
        return type(err)


def _assert_same(
    before: Function, after: Function, shape: tuple[int, ...], captures: list[Any]
) -> None:
    expected = _outcome(before, shape, captures, 20_000)
    if expected is StepLimitExceeded:
        # The unrolled loop takes at most a few percent fewer steps per iteration.
        assert _outcome(after, shape, captures, 10_000) is StepLimitExceeded
        return
    got = _outcome(after, shape, captures, 40_000)
    if isinstance(expected, type) or isinstance(got, type):
        assert expected == got, print_function(after)
    else:
        assert same_results(expected, got), print_function(after)  # type: ignore[arg-type]


# -- golden IR ----------------------------------------------------------------------------


def test_constant_step_loop_runs_four_chained_iterations_before_the_original_loop() -> None:
    _, out = _unrolled(CONST_STEP)
    filecheck(
        print_function(out),
        """\
        CHECK: ^entry.0:
        CHECK: br ^unroll_pre.1(%p.0, %2)
        CHECK: ^unroll_pre.1(%[[K0:[a-z0-9.]+]]: i64, %[[A0:[a-z0-9.]+]]: f64):
        CHECK-NEXT: %[[T:[0-9]+]] = const 9 : i64
        CHECK-NEXT: %[[M:[0-9]+]] = sub %3, %[[T]] : i64
        CHECK-NEXT: br ^unroll.2(%[[K0]], %[[A0]])
        CHECK: ^unroll.2(%[[K:k.[0-9]+]]: i64, %[[ACC:acc.[0-9]+]]: f64):
        CHECK-NEXT: %[[GO:[0-9]+]] = lt %[[K]], %[[M]] {unrolled = 4} : bool
        CHECK-NEXT: condbr %[[GO]], ^unroll_body.3, ^loop.4(%[[K]], %[[ACC]])
        CHECK: ^unroll_body.3:
        CHECK: %[[L1:[0-9]+]] = load %vals.1, %[[K]] : f64
        CHECK: %[[S1:[0-9]+]] = add %[[ACC]], %[[L1]] : f64
        CHECK: %[[K1:[0-9]+]] = add %[[K]], %4 : i64
        CHECK: %[[L2:[0-9]+]] = load %vals.1, %[[K1]] : f64
        CHECK: %[[S2:[0-9]+]] = add %[[S1]], %[[L2]] : f64
        CHECK: %[[K2:[0-9]+]] = add %[[K1]], %4 : i64
        CHECK: %[[L3:[0-9]+]] = load %vals.1, %[[K2]] : f64
        CHECK: %[[S3:[0-9]+]] = add %[[S2]], %[[L3]] : f64
        CHECK: %[[K3:[0-9]+]] = add %[[K2]], %4 : i64
        CHECK: %[[L4:[0-9]+]] = load %vals.1, %[[K3]] : f64
        CHECK: %[[S4:[0-9]+]] = add %[[S3]], %[[L4]] : f64
        CHECK: %[[K4:[0-9]+]] = add %[[K3]], %4 : i64
        CHECK-NEXT: br ^unroll.2(%[[K4]], %[[S4]])
        CHECK: ^loop.4(%[[KO:k.[0-9]+]]: i64, %{{.*}}: f64):
        CHECK-NEXT: lt %[[KO]], %3 : bool
        CHECK: ^body.5:
        CHECK-COUNT-1: load
        CHECK: ^exit.6:
        """,
    )


def test_captured_step_loop_is_entered_only_for_a_positive_bounded_step() -> None:
    _, out = _unrolled(PARTIAL_DOT)
    filecheck(
        print_function(out),
        """\
        CHECK: ^unroll_pre.1(%[[K0:k.[0-9]+]]: i64, %[[A0:acc.[0-9]+]]: f32):
        CHECK: %[[POS:[0-9]+]] = ge %p1.2, %{{[0-9]+}} : bool
        CHECK: %[[TOP:[0-9]+]] = const 1152921504606846976 : i64
        CHECK: %[[SMALL:[0-9]+]] = le %p1.2, %[[TOP]] : bool
        CHECK: %[[OK:[0-9]+]] = and %[[POS]], %[[SMALL]] : bool
        CHECK: condbr %[[OK]], ^unroll_bound.2(%[[K0]], %[[A0]]), ^loop.5(%[[K0]], %[[A0]])
        CHECK: ^unroll_bound.2(%[[K1:k.[0-9]+]]: i64, %[[A1:acc.[0-9]+]]: f32):
        CHECK: %[[T:[0-9]+]] = mul %p1.2, %{{[0-9]+}} : i64
        CHECK: %[[M:[0-9]+]] = sub %5, %[[T]] : i64
        CHECK: br ^unroll.3(%[[K1]], %[[A1]])
        CHECK: ^unroll.3(%[[K:k.[0-9]+]]: i64
        CHECK-NEXT: lt %[[K]], %[[M]] {unrolled = 4} : bool
        CHECK: ^unroll_body.4:
        CHECK-COUNT-4: load %x.1
        CHECK-NOT: load %x.1
        CHECK: br ^unroll.3(
        CHECK: ^loop.5(
        CHECK: select %7,
        """,
    )


def test_unrolled_counter_keeps_its_lower_bound_so_the_wrap_tests_fold() -> None:
    """The bound ``m`` is computed after the step checks and the step limit leaves room for
    a whole trip's adds, so range facts keep ``k >= 0`` through the unrolled loop; the
    default pipeline's ``divmod`` after ``unroll`` then drops each copy's ``k < 0`` wrap."""
    out = run_pipeline(parse_function(PARTIAL_DOT), CompileOptions())
    text = print_function(out)
    unrolled = text[text.index("\n^unroll_body") : text.index("\n^loop")]
    assert unrolled.count("load %x.1") == 4, text
    assert "select" not in unrolled, text
    facts = RangeFacts(out)
    body = next(b for b in out.blocks if b.hint == "unroll_body")
    head = next(b for b in out.blocks if b.hint == "unroll")
    k = head.args[0]
    r = facts.range_of(k, body)
    assert r is not None and r.lo >= 0, text


def test_csr_row_with_int32_bounds_needs_no_run_time_guard() -> None:
    _, out = _unrolled(CSR_ROW)
    filecheck(
        print_function(out),
        """\
        CHECK: ^unroll_pre.1(%k
        CHECK-NEXT: const 3 : i64
        CHECK-NEXT: sub %9,
        CHECK-NEXT: br ^unroll.2(
        CHECK: ^unroll_body.3:
        CHECK-COUNT-4: load %vals.2
        CHECK: ^loop.4(
        """,
    )


# Each leaves the function unchanged, for the reason its name gives.
NOT_UNROLLED = {
    "body_of_two_blocks": """\
func @f(index %p.0: i64, capture "v" %v.1: array<f64,1>) -> (f64) {
^entry.0:
  %2 = const 0.0 : f64
  %3 = shape %v.1 {axis = 0} : i64
  %4 = const 1 : i64
  br ^loop.1(%p.0, %2)
^loop.1(%k.5: i64, %acc.6: f64):
  %7 = lt %k.5, %3 : bool
  condbr %7, ^body.2, ^exit.4
^body.2:
  %8 = load %v.1, %k.5 : f64
  br ^latch.3(%8)
^latch.3(%x.9: f64):
  %10 = add %acc.6, %x.9 : f64
  %11 = add %k.5, %4 : i64
  br ^loop.1(%11, %10)
^exit.4:
  return %acc.6
}
""",
    "step_so_large_that_three_steps_wrap": """\
func @f(index %p.0: i64, capture "v" %v.1: array<f64,1>) -> (f64) {
^entry.0:
  %2 = const 0.0 : f64
  %3 = shape %v.1 {axis = 0} : i64
  %4 = const 4611686018427387904 : i64
  br ^loop.1(%p.0, %2)
^loop.1(%k.5: i64, %acc.6: f64):
  %7 = lt %k.5, %3 : bool
  condbr %7, ^body.2, ^exit.3
^body.2:
  %8 = load %v.1, %k.5 : f64
  %9 = add %acc.6, %8 : f64
  %10 = add %k.5, %4 : i64
  br ^loop.1(%10, %9)
^exit.3:
  return %acc.6
}
""",
    "unsigned_counter_below_captured_bound": """\
func @f(index %p.0: i64, capture "v" %v.1: array<f64,1>, capture "n" %n.2: u64) -> (f64) {
^entry.0:
  %3 = const 0.0 : f64
  %4 = cast %p.0 : u64
  %5 = const 1 : u64
  br ^loop.1(%4, %3)
^loop.1(%k.6: u64, %acc.7: f64):
  %8 = lt %k.6, %n.2 : bool
  condbr %8, ^body.2, ^exit.3
^body.2:
  %9 = cast %k.6 : i64
  %10 = load %v.1, %9 : f64
  %11 = add %acc.7, %10 : f64
  %12 = add %k.6, %5 : u64
  br ^loop.1(%12, %11)
^exit.3:
  return %acc.7
}
""",
    "bound_changing_in_the_loop": """\
func @f(index %p.0: i64, capture "v" %v.1: array<f64,1>) -> (f64) {
^entry.0:
  %2 = const 0.0 : f64
  %3 = shape %v.1 {axis = 0} : i64
  %4 = const 1 : i64
  br ^loop.1(%p.0, %2, %3)
^loop.1(%k.5: i64, %acc.6: f64, %n.7: i64):
  %8 = lt %k.5, %n.7 : bool
  condbr %8, ^body.2, ^exit.3
^body.2:
  %9 = load %v.1, %k.5 : f64
  %10 = add %acc.6, %9 : f64
  %11 = add %k.5, %4 : i64
  %12 = sub %n.7, %4 : i64
  br ^loop.1(%11, %10, %12)
^exit.3:
  return %acc.6
}
""",
    "step_changing_in_the_loop": """\
func @f(index %p.0: i64, capture "v" %v.1: array<f64,1>) -> (f64) {
^entry.0:
  %2 = const 0.0 : f64
  %3 = shape %v.1 {axis = 0} : i64
  %4 = const 1 : i64
  br ^loop.1(%p.0, %2, %4)
^loop.1(%k.5: i64, %acc.6: f64, %s.7: i64):
  %8 = lt %k.5, %3 : bool
  condbr %8, ^body.2, ^exit.3
^body.2:
  %9 = load %v.1, %k.5 : f64
  %10 = add %acc.6, %9 : f64
  %11 = add %k.5, %s.7 : i64
  %12 = add %s.7, %4 : i64
  br ^loop.1(%11, %10, %12)
^exit.3:
  return %acc.6
}
""",
    "counter_doubling_not_stepping": """\
func @f(index %p.0: i64, capture "v" %v.1: array<f64,1>) -> (f64) {
^entry.0:
  %2 = const 0.0 : f64
  %3 = shape %v.1 {axis = 0} : i64
  %4 = const 2 : i64
  br ^loop.1(%p.0, %2)
^loop.1(%k.5: i64, %acc.6: f64):
  %7 = lt %k.5, %3 : bool
  condbr %7, ^body.2, ^exit.3
^body.2:
  %8 = load %v.1, %k.5 : f64
  %9 = add %acc.6, %8 : f64
  %10 = mul %k.5, %4 : i64
  br ^loop.1(%10, %9)
^exit.3:
  return %acc.6
}
""",
    "test_not_a_bound_on_the_counter": """\
func @f(index %p.0: i64, capture "v" %v.1: array<f64,1>) -> (f64) {
^entry.0:
  %2 = const 0.0 : f64
  %3 = shape %v.1 {axis = 0} : i64
  %4 = const 1 : i64
  br ^loop.1(%p.0, %2)
^loop.1(%k.5: i64, %acc.6: f64):
  %7 = le %k.5, %3 : bool
  condbr %7, ^body.2, ^exit.3
^body.2:
  %8 = load %v.1, %k.5 : f64
  %9 = add %acc.6, %8 : f64
  %10 = add %k.5, %4 : i64
  br ^loop.1(%10, %9)
^exit.3:
  return %acc.6
}
""",
}


@pytest.mark.parametrize("case", sorted(NOT_UNROLLED))
def test_loop_outside_the_pattern_is_left_unchanged(case: str) -> None:
    fn, out = _unrolled(NOT_UNROLLED[case])
    assert print_function(out) == print_function(fn)


def test_body_over_the_size_limit_is_left_unchanged() -> None:
    fn = parse_function(MATMUL)
    out = Unroll(max_body_ops=5).run(fn)
    assert print_function(out) == print_function(fn)
    assert print_function(Unroll(max_body_ops=7).run(fn)) != print_function(fn)


# -- interpreter results before and after ---------------------------------------------------


@pytest.mark.parametrize("factor", [2, 3, 4])
@pytest.mark.parametrize("length", [0, 1, 2, 3, 4, 5, 7, 8, 9, 17])
def test_constant_step_loop_reads_to_the_end_of_the_array_and_no_further(
    factor: int, length: int
) -> None:
    # Every start index of the shape: trip counts 0 .. ceil(length / 3), loads up to the
    # last element; a load past the bound would raise IndexError.
    fn, out = _unrolled(CONST_STEP, factor)
    vals = np.linspace(0.1, 7.3, length) ** 3
    expected = compute(fn, (length,), [vals])
    assert same_results(expected, compute(out, (length,), [vals]))


@pytest.mark.parametrize("step", [-3, -1, 0, 1, 2, 3, 5, 8, I64_MAX])
def test_captured_step_dot_matches_for_every_start_and_step(step: int) -> None:
    fn, out = _unrolled(PARTIAL_DOT)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(23).astype(np.float32) * 1e4
    y = rng.standard_normal(23).astype(np.float32)
    _assert_same(fn, out, (23,), [x, step, y])


@pytest.mark.parametrize("trips", [0, 1, 2, 3, 4, 5, 7, 8, 9])
def test_csr_row_matches_for_each_row_length(trips: int) -> None:
    fn, out = _unrolled(CSR_ROW)
    # rows 0..3: lengths trips, 0, trips + 1, and a reversed (empty) row
    rp = np.array([0, trips, trips, 2 * trips + 1, 0], dtype=np.int32)
    vals = np.cumsum(np.full(2 * trips + 1, 0.1)) ** 2
    expected = compute(fn, (4,), [rp, vals])
    assert same_results(expected, compute(out, (4,), [rp, vals]))


def test_csr_row_with_negative_bounds_wraps_like_the_original() -> None:
    fn, out = _unrolled(CSR_ROW)
    rp = np.array([-6, 0, -3, -9, 5], dtype=np.int32)
    vals = np.arange(9, dtype=np.float64) ** 1.5
    _assert_same(fn, out, (4,), [rp, vals])


@pytest.mark.parametrize("inner", [0, 1, 3, 4, 5, 9])
def test_matrix_multiply_dot_matches(inner: int) -> None:
    fn, out = _unrolled(MATMUL)
    rng = np.random.default_rng(inner)
    a = rng.standard_normal((3, inner)).astype(np.float32)
    bt = rng.standard_normal((2, inner)).astype(np.float32)
    assert same_results(compute(fn, (3, 2), [a, bt]), compute(out, (3, 2), [a, bt]))


def test_inner_loop_of_a_nest_is_unrolled_and_matches() -> None:
    fn, out = _unrolled(NESTED)
    assert "^unroll_body" in print_function(out)
    vals = np.linspace(-2.0, 3.0, 9) ** 3
    assert same_results(compute(fn, (12,), [vals]), compute(out, (12,), [vals]))


@pytest.mark.parametrize(
    ("lo", "n", "step"),
    [
        (0, I64_MIN + 5, 3),  # n - 3*step would wrap to a huge bound: the floor check skips U
        (I64_MIN, I64_MIN + 10, 1),  # the lowest counters
        (I64_MIN, I64_MIN + 10, 3),
        (I64_MAX - 30, I64_MAX, 3),  # the counter wraps past the top and runs on
        (I64_MAX - 30, I64_MAX, 7),
        (-5, 20, I64_MAX // 3),  # the largest step U accepts, and one above it
        (-5, 20, I64_MAX // 3 + 1),
        (I64_MIN, I64_MAX, I64_MAX),
        (10, -10, -3),  # a negative step counts down in the original loop only
        (10, 10, 1),
    ],
)
def test_general_counted_loop_matches_at_the_edges_of_i64(lo: int, n: int, step: int) -> None:
    fn, out = _unrolled(GENERAL)
    x = np.linspace(0.5, 16.5, 16) ** 2.5
    _assert_same(fn, out, (3,), [x, lo, n, step])


@settings(max_examples=150, deadline=None)
@given(
    lo=st.integers(I64_MIN, I64_MAX) | st.integers(-40, 40),
    span=st.integers(-20, 40),
    n=st.none() | st.integers(I64_MIN, I64_MAX),
    step=st.integers(-6, 12) | st.integers(I64_MIN, I64_MAX),
    factor=st.integers(2, 5),
)
def test_general_counted_loop_matches_at_extreme_bounds_and_steps(
    lo: int, span: int, n: int | None, step: int, factor: int
) -> None:
    fn, out = _unrolled(GENERAL, factor)
    bound = n if n is not None else max(I64_MIN, min(I64_MAX, lo + span))
    x = np.linspace(0.5, 16.5, 16) ** 2.5
    _assert_same(fn, out, (3,), [x, lo, bound, step])


@settings(max_examples=40, deadline=None)
@given(program=programs(), factor=st.sampled_from([2, 4]))
def test_random_programs_keep_their_interpreter_results(
    program: tuple[Any, ...], factor: int
) -> None:
    fn, shape, captures = program
    verify(fn)
    before = print_function(fn)
    expected = compute(fn, shape, captures)
    out = Unroll(factor=factor).run(fn)
    verify(out)
    assert print_function(fn) == before, "the pass mutated the IR it was handed"
    assert same_results(expected, compute(out, shape, captures)), print_function(out)


FIVE_TAPS = """\
func @taps(index %p.0: i64, capture "vals" %vals.1: array<f64,1>) -> (f64) {
^entry.0:
  %2 = const 0.0 : f64
  %3 = const 5 : i64
  %4 = const 1 : i64
  %5 = const 0 : i64
  br ^loop.1(%5, %2)
^loop.1(%k.6: i64, %acc.7: f64):
  %8 = lt %k.6, %3 : bool
  condbr %8, ^body.2, ^exit.3
^body.2:
  %9 = load %vals.1, %k.6 : f64
  %10 = add %acc.7, %9 : f64
  %11 = add %k.6, %4 : i64
  br ^loop.1(%11, %10)
^exit.3:
  return %acc.7
}
"""


def test_a_loop_with_a_constant_trip_count_is_left_to_nvvm():
    # NVVM unrolls a known trip count fully by itself, but not an unrolled loop plus its
    # remainder loop (the 2d-convolution's 5-tap rows).
    fn = parse_function(FIVE_TAPS)
    verify(fn)
    assert print_function(Unroll().run(fn)) == print_function(fn)
