"""``narrow`` marks the add/sub/mul it narrows ``{nsw = true}``, and only those.

Golden checks: the counter and offset adds of a convolution loop are marked, the user's own
``np.int32`` arithmetic (which must wrap like NumPy) and ops left ``i64`` are not, and the
attribute survives print -> parse. Semantic check: with the interpreter instrumented to
compute every marked op exactly, no marked op overflows ``int32`` -- on random programs and
on captured scalars anywhere inside the pass's assumption, at its edges included.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Iterator
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.ir import interp
from offload.ir.core import Function, Op
from offload.ir.ops import Opcode
from offload.ir.parser import parse_function
from offload.ir.printer import print_function
from offload.ir.types import I32, I64
from offload.ir.verifier import verify
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.passes.narrow import NARROW_LIMIT, NSW, NarrowIndexArithmetic
from tests.corpus.loops import correlate
from tests.strategies.programs import programs, same_results

pytestmark = pytest.mark.unit

NARROW = NarrowIndexArithmetic()
_EXACT = {Opcode.ADD: operator.add, Opcode.SUB: operator.sub, Opcode.MUL: operator.mul}


def _optimised(fn, rank):
    return run_pipeline(check_and_lower(fn, rank).ir, CompileOptions(verify=True))


def _int_arith(fn: Function) -> list[Op]:
    return [op for op in fn.ops() if op.opcode in _EXACT and op.result.type in (I32, I64)]


@contextlib.contextmanager
def _marked_ops_checked() -> Iterator[list[int]]:
    """While active, the interpreter computes each ``nsw`` op exactly and fails if the
    result leaves int32; yields the list of exact results it checked."""
    real = interp.eval_op_unchecked
    seen: list[int] = []

    def checked(opcode, attrs, operands, result_type):
        if attrs.get(NSW):
            exact = _EXACT[opcode](int(operands[0]), int(operands[1]))
            assert result_type == I32 and -(2**31) <= exact < 2**31, (opcode, operands)
            seen.append(exact)
        return real(opcode, attrs, operands, result_type)

    with mock.patch.object(interp, "eval_op_unchecked", checked):
        yield seen


signal = np.arange(40, dtype=np.float32)
taps = np.ones(9, np.float32)


convolve = correlate(signal, taps)


def test_convolution_counter_and_offset_adds_are_marked_nsw():
    out = NARROW.run(_optimised(convolve, 1))
    verify(out)
    ints = _int_arith(out)
    assert len(ints) >= 2, print_function(out)  # k + 1 and t + k at least
    assert all(op.result.type == I32 and op.attrs.get(NSW) is True for op in ints)
    assert "add" in print_function(out) and "{nsw = true} : i32" in print_function(out)


def test_the_unnarrowed_function_carries_no_nsw():
    ir = _optimised(convolve, 1)
    NARROW.run(ir)
    assert not any(NSW in op.attrs for op in ir.ops())


base = np.int32(2**31 - 2)


def user_int32(i):
    # NumPy int32 arithmetic: wraps past 2**31 - 1, so it must not be marked.
    return base + np.int32(i) * np.int32(3) - np.int32(1)


def test_user_int32_arithmetic_is_not_marked_and_still_wraps():
    ir = _optimised(user_int32, 1)
    assert [op.result.type for op in _int_arith(ir)] == [I32] * len(_int_arith(ir))
    out = NARROW.run(ir)
    assert _int_arith(out) and not any(NSW in op.attrs for op in out.ops())
    (got,) = interp.compute(out, (4,), [base])
    with np.errstate(over="ignore"):
        want = [base + np.int32(i) * np.int32(3) - np.int32(1) for i in range(4)]
    np.testing.assert_array_equal(got, np.array(want, dtype=np.int32))
    assert got[1] < 0  # it did wrap


def product_of_indices(i, j):
    return i * j + 1


def test_ops_left_i64_are_not_marked():
    out = NARROW.run(_optimised(product_of_indices, 2))
    (mul,) = [op for op in out.ops() if op.opcode is Opcode.MUL]
    assert mul.result.type == I64 and NSW not in mul.attrs


def test_nsw_prints_and_parses_back_to_the_same_text():
    text = print_function(NARROW.run(_optimised(convolve, 1)))
    assert "{nsw = true}" in text
    again = parse_function(text)
    verify(again)
    assert print_function(again) == text
    assert any(op.attrs.get(NSW) is True for op in again.ops())


def test_no_marked_op_overflows_on_the_convolution():
    out = NARROW.run(_optimised(convolve, 1))
    with _marked_ops_checked() as seen:
        (got,) = interp.compute(out, (31,), [taps, signal])
    assert seen
    (want,) = interp.compute(_optimised(convolve, 1), (31,), [taps, signal])
    np.testing.assert_array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(program=programs())
def test_marked_ops_of_random_programs_never_overflow_and_only_narrowed_ops_are_marked(program):
    fn, shape, captures = program
    want = interp.compute(fn, shape, captures)
    out = NARROW.run(fn)
    verify(out)
    # narrow only inserts casts: the other ops correspond one to one, block by block.
    for before, after in zip(fn.blocks, out.blocks, strict=True):
        old = [op for op in before.ops if op.opcode is not Opcode.CAST]
        new = [op for op in after.ops if op.opcode is not Opcode.CAST]
        for a, b in zip(old, new, strict=True):
            assert not b.attrs.get(NSW) or (a.result.type == I64 and b.result.type == I32)
    with _marked_ops_checked():
        got = interp.compute(out, shape, captures)
    assert same_results(want, got), print_function(out)


k1 = np.int64(1)
k2 = np.int64(1)


def index_formula(i, j):
    q = (i * 3 + j - k2) // 3
    t = q - j if i > j else q + k1
    return t * 2 + min(i - k1, j + k2)


_edge = st.sampled_from([-NARROW_LIMIT, -NARROW_LIMIT + 1, -1, 0, 1, NARROW_LIMIT - 1])
_scalars = st.one_of(st.integers(-NARROW_LIMIT, NARROW_LIMIT - 1), _edge)


@settings(max_examples=60, deadline=None)
@given(a=_scalars, b=_scalars, shape=st.tuples(st.integers(1, 4), st.integers(1, 4)))
def test_marked_ops_never_overflow_for_scalars_anywhere_in_the_assumption(a, b, shape):
    ir = _optimised(index_formula, 2)
    out = NARROW.run(ir)
    assert any(NSW in op.attrs for op in out.ops())
    caps = [np.int64({"k1": a, "k2": b}[cap.name]) for cap in ir.captures]
    with _marked_ops_checked():
        got = interp.compute(out, shape, caps)
    assert same_results(interp.compute(ir, shape, caps), got)
