"""Constant captured arrays (``Capture.value``): the IR text round trip, the verifier's
check, the ``consts`` pass (golden IR, and the interpreter's values unchanged) and the GPU
kernel's choice of what to read from the constant bank (``offload.ptx.passes.const_bank``)."""

from __future__ import annotations

import dataclasses
import textwrap
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.ir.core import Capture, ConstArray, Function
from offload.ir.interp import compute
from offload.ir.lexer import IRParseError
from offload.ir.parser import parse_function
from offload.ir.printer import print_function
from offload.ir.verifier import IRVerificationError, verify
from offload.opt.const_captures import ConstantCaptures
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.passes.const_bank import bank_constants
from tests.opt.golden import filecheck
from tests.strategies.programs import programs, same_results

pytestmark = pytest.mark.unit

W = np.array([[2.0, -2.0, 0.5], [1.0, -1.0, 3.0]], dtype=np.float32)
X = np.arange(8, dtype=np.float32) - 3.0

# w[1, 2] * x[i] + w[0, j] * x[i] + w.shape[1] + w[2, 0] (row 2 is past the end)
TEXT = (
    (
        'func @f(index %i.0: i64, index %j.1: i64, capture "w" %w.2: array<f32,2>, '
        'capture "x" %x.3: array<f32,1>) -> (f32) {\n'
    )
    + """\
^entry.0:
  %4 = const 1 : i64
  %5 = const 2 : i64
  %6 = const 0 : i64
  %7 = load %w.2, %4, %5 : f32
  %8 = load %x.3, %i.0 : f32
  %9 = mul %7, %8 : f32
  %10 = load %w.2, %6, %j.1 : f32
  %11 = mul %10, %8 : f32
  %12 = add %9, %11 : f32
  %13 = shape %w.2 {axis = 1} : i64
  %14 = cast %13 : f32
  %15 = add %12, %14 : f32
  %16 = load %w.2, %5, %6 : f32
  %17 = add %15, %16 : f32
  return %17
}
"""
)


def _pinned(fn: Function, **values: np.ndarray) -> Function:
    caps = [
        Capture(c.name, c.type, ConstArray.of(values[c.name]) if c.name in values else None)
        for c in fn.captures
    ]
    return dataclasses.replace(fn, captures=caps)


def test_printed_contents_parse_back_to_the_same_function():
    fn = _pinned(parse_function(TEXT), w=W)
    text = print_function(fn)
    assert 'capture "w" %w.2: array<f32,2> = const(2x3) "' in text
    again = parse_function(text)
    assert again.captures[0].value == ConstArray.of(W)
    assert again.captures[1].value is None
    assert print_function(again) == text
    np.testing.assert_array_equal(again.captures[0].value.array(), W)


@pytest.mark.parametrize(
    ("suffix", "message"),
    [
        ('= const(2x2) "0000803f"', "does not fit"),
        ('= const(8) "00"', "does not fit"),
        ('= const(2) "zz"', "bad constant"),
    ],
)
def test_contents_that_do_not_fit_the_type_are_a_parse_error(suffix, message):
    text = f"""\
func @g(index %i.0: i64, capture "a" %a.1: array<f32,1> {suffix}) -> (f32) {{
^entry.0:
  %2 = load %a.1, %i.0 : f32
  return %2
}}
"""
    with pytest.raises(IRParseError, match=message):
        parse_function(text)


def test_contents_on_a_scalar_capture_are_a_parse_error():
    text = """\
func @g(index %i.0: i64, capture "s" %s.1: f32 = const(1) "0000803f") -> (f32) {
^entry.0:
  return %s.1
}
"""
    with pytest.raises(IRParseError, match="only an array capture"):
        parse_function(text)


def test_verifier_rejects_contents_of_another_dtype():
    fn = parse_function(TEXT)
    fn.captures[0] = Capture("w", fn.captures[0].type, ConstArray.of(W.astype(np.float64)))
    with pytest.raises(IRVerificationError, match="holds constant contents"):
        verify(fn)


def test_pass_folds_the_shape_and_the_constant_in_bounds_loads():
    fn = _pinned(parse_function(TEXT), w=W)
    out = ConstantCaptures().run(fn)
    verify(out)
    filecheck(
        print_function(out),
        """
        CHECK: %7 = const 3.0 : f32
        CHECK: %8 = load %x.3, %i.0 : f32
        CHECK: %10 = load %w.2, %6, %j.1 : f32
        CHECK: %13 = const 3 : i64
        CHECK: %16 = load %w.2, %5, %6 : f32
        """,
    )
    # the interpreter gives the same values before and after (row 2 is never read: j < 3
    # keeps w[0, j] in bounds, and the out-of-bounds w[2, 0] is left to the backend)
    fixed = parse_function(
        TEXT.replace("  %16 = load %w.2, %5, %6 : f32\n", "  %16 = const 0.0 : f32\n")
    )
    fixed = _pinned(fixed, w=W)
    before = compute(fixed, (8, 3), [W, X])
    after = compute(ConstantCaptures().run(fixed), (8, 3), [W, X])
    np.testing.assert_array_equal(before[0], after[0])


@settings(max_examples=60, deadline=None)
@given(programs(), st.data())
def test_random_programs_keep_their_values_when_pinned(case: Any, data: Any) -> None:
    # any subset of a random program's arrays pinned: the interpreter's values stay
    fn, shape, caps = case
    pins = data.draw(st.lists(st.booleans(), min_size=len(caps), max_size=len(caps)))
    pinned = {c.name: v for c, v, p in zip(fn.captures, caps, pins, strict=True) if p and v.ndim}
    before = compute(fn, shape, caps)
    after = compute(ConstantCaptures().run(_pinned(fn, **pinned)), shape, caps)
    assert same_results(before, after)


def test_pass_leaves_a_function_without_contents_alone():
    fn = parse_function(TEXT)
    assert print_function(ConstantCaptures().run(fn)) == print_function(fn)


def test_default_pipeline_folds_after_index_folding():
    # the index becomes a constant only after ``fold``: ``consts`` runs again after it
    text = textwrap.dedent(
        """\
        func @h(index %i.0: i64, capture "w" %w.1: array<f32,2>) -> (f32) {
        ^entry.0:
          %2 = const 1 : i64
          %3 = add %2, %2 : i64
          %4 = sub %3, %2 : i64
          %5 = load %w.1, %4, %3 : f32
          %6 = cast %i.0 : f32
          %7 = mul %5, %6 : f32
          return %7
        }
        """
    )
    out = run_pipeline(_pinned(parse_function(text), w=W), CompileOptions(verify=True))
    assert "load" not in print_function(out)
    assert "const 3.0 : f32" in print_function(out)


BANK = (
    (
        'func @k(index %i.0: i64, capture "w" %w.1: array<f32,1>, '
        'capture "lut" %lut.2: array<f32,1>, capture "unused" %u.3: array<f32,1>) -> (f32) {\n'
    )
    + """\
^entry.0:
  %4 = const 0 : i64
  %5 = const 3 : i64
  br ^loop.1(%4, %4)
^loop.1(%t.6: i64, %acc.7: i64):
  %8 = lt %t.6, %5 : bool
  condbr %8, ^body.2(), ^exit.3()
^body.2:
  %9 = load %w.1, %t.6 : f32
  %10 = load %lut.2, %i.0 : f32
  %11 = add %9, %10 : f32
  %12 = cast %11 : i64
  %13 = add %acc.7, %12 : i64
  %14 = const 1 : i64
  %15 = add %t.6, %14 : i64
  br ^loop.1(%15, %13)
^exit.3:
  %16 = cast %acc.7 : f32
  return %16
}
"""
)


def test_bank_keeps_arrays_read_at_uniform_indices_only():
    v = np.ones(4, dtype=np.float32)
    fn = _pinned(parse_function(BANK), w=v, lut=v, unused=v)
    out = bank_constants(fn)
    # w: read at the loop counter (the same in every thread); lut: at the thread's index
    # (the constant cache would serialise the warp); unused: not read at all
    assert [c.value is not None for c in out.captures] == [True, False, False]
    assert fn.captures[1].value is not None  # the input is not changed
