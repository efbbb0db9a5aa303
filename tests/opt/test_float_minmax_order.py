"""Float ``min``/``max`` keep their operand order through the optimiser (Python's first
operand wins ties and NaN comparisons: ``min(-0.0, 0.0)`` is ``-0.0``, the swap is ``0.0``).
Found by the random-program test of the default pipeline: the constant-to-the-right
canonicalisation of ``fold`` and CSE's operand sorting treated them as commutative."""

from __future__ import annotations

import numpy as np
import pytest

from offload.ir.interp import compute
from offload.ir.parser import parse_function
from offload.ir.printer import print_function
from offload.opt.manager import run_pipeline
from offload.opt.registry import DEFAULT_PIPELINE
from offload.options import CompileOptions

pytestmark = pytest.mark.unit

CONST_FIRST = """\
func @f(index %i.0: i64, capture "a" %a.1: array<f64,1>) -> (f64, f64) {
^entry.0:
  %2 = const -0.0 : f64
  %3 = load %a.1, %i.0 : f64
  %4 = min %2, %3 : f64
  %5 = max %2, %3 : f64
  return %4, %5
}
"""

BOTH_ORDERS = """\
func @g(index %i.0: i64, capture "a" %a.1: array<f64,1>, capture "b" %b.2: array<f64,1>) -> (f64) {
^entry.0:
  %3 = load %a.1, %i.0 : f64
  %4 = load %b.2, %i.0 : f64
  %5 = min %3, %4 : f64
  %6 = min %4, %3 : f64
  %7 = max %5, %6 : f64
  return %6
}
"""


@pytest.mark.parametrize("pipeline", ["fold", "cse", DEFAULT_PIPELINE])
def test_signed_zero_and_nan_ties_keep_the_first_operand(pipeline):
    a = np.array([0.0, -0.0, np.nan, 1.0])
    b = np.array([-0.0, 0.0, 1.0, np.nan])
    for text, caps in ((CONST_FIRST, [a]), (BOTH_ORDERS, [a, b])):
        fn = parse_function(text)
        want = compute(fn, (4,), caps)
        got = compute(run_pipeline(fn, CompileOptions(pipeline=pipeline, verify=True)), (4,), caps)
        for w, g in zip(want, got, strict=True):
            assert np.array_equal(np.signbit(w), np.signbit(g)), print_function(fn)
            np.testing.assert_array_equal(w, g)


def test_integer_min_is_still_canonicalised_for_cse():
    fn = parse_function(
        """\
func @h(index %i.0: i64, capture "a" %a.1: array<i64,1>) -> (i64) {
^entry.0:
  %2 = load %a.1, %i.0 : i64
  %3 = const 4 : i64
  %4 = min %3, %2 : i64
  %5 = min %2, %3 : i64
  %6 = add %4, %5 : i64
  return %6
}
"""
    )
    out = run_pipeline(fn, CompileOptions(pipeline="fold,cse,dce", verify=True))
    assert print_function(out).count("= min ") == 1
