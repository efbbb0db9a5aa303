"""The interpreter runs loops, branches, loads and shapes exactly as Python would."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from offload.ir import Builder, Capture, Opcode
from offload.ir.core import Function, Value
from offload.ir.interp import InterpreterError, StepLimitExceeded, compute, evaluate
from offload.ir.parser import parse_function
from offload.ir.types import BOOL, F32, F64, I32, I64, ArrayType
from offload.ir.verifier import verify

pytestmark = pytest.mark.unit


def _parse(text: str) -> Function:
    fn = parse_function(textwrap.dedent(text))
    verify(fn)
    return fn


# sum(a[i, k] for k in range(a.shape[1])) as f64, with a while loop and block arguments.
ROW_SUM = _parse(
    """\
    func @row_sum(index %i.0: i64, capture "a" %a.1: array<f32,2>) -> (f64) {
    ^entry.0:
      %n.2 = shape %a.1 {axis = 1} : i64
      %3 = const 0 : i64
      %4 = const 0.0 : f64
      br ^loop.1(%3, %4)
    ^loop.1(%k.5: i64, %acc.6: f64):
      %7 = lt %k.5, %n.2 : bool
      condbr %7, ^body.2, ^done.3
    ^body.2:
      %x.8 = load %a.1, %i.0, %k.5 : f32
      %9 = cast %x.8 : f64
      %10 = add %acc.6, %9 : f64
      %11 = const 1 : i64
      %12 = add %k.5, %11 : i64
      br ^loop.1(%12, %10)
    ^done.3:
      return %acc.6
    }
    """
)


def test_loop_with_block_arguments_sums_a_row() -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    (row,) = compute(ROW_SUM, (3,), [a])
    assert row.dtype == np.float64
    assert row.tolist() == [6.0, 22.0, 38.0]
    assert evaluate(ROW_SUM, [1], [a]) == (np.float64(22.0),)


def _collatz() -> Function:
    """Steps of the Collatz sequence from i + 1 (branches inside a loop, a swap-free phi)."""
    b = Builder("collatz", 1)
    (i,) = b.function.index_params
    one, two, three, zero = (b.const(v, I64) for v in (1, 2, 3, 0))
    start = b.binary(Opcode.ADD, i, one)
    head = b.new_block([I64, I64], hint="head")
    body = b.new_block(hint="body")
    even = b.new_block(hint="even")
    odd = b.new_block(hint="odd")
    done = b.new_block(hint="done")
    b.jump(head, [start, zero])
    b.position_at_end(head)
    n, steps = head.args
    b.branch(b.binary(Opcode.NE, n, one), body, done)
    b.position_at_end(body)
    steps1 = b.binary(Opcode.ADD, steps, one)
    b.branch(b.binary(Opcode.EQ, b.binary(Opcode.FLOORMOD, n, two), zero), even, odd)
    b.position_at_end(even)
    b.jump(head, [b.binary(Opcode.FLOORDIV, n, two), steps1])
    b.position_at_end(odd)
    b.jump(head, [b.binary(Opcode.ADD, b.binary(Opcode.MUL, n, three), one), steps1])
    b.position_at_end(done)
    b.ret([steps])
    b.function.result_types.append(I64)
    verify(b.function)
    return b.function


def _py_collatz(n: int) -> int:
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


COLLATZ = _collatz()


def test_branches_inside_loop_match_python() -> None:
    (out,) = compute(COLLATZ, (30,), [])
    assert out.tolist() == [_py_collatz(n + 1) for n in range(30)]


def test_endless_loop_hits_the_step_limit() -> None:
    fn = _parse(
        """\
        func @spin(index %i.0: i64) -> (i64) {
        ^entry.0:
          br ^loop.1
        ^loop.1:
          br ^loop.1
        }
        """
    )
    with pytest.raises(StepLimitExceeded, match="more than 1000 steps"):
        evaluate(fn, [0], [], max_steps=1000)


def test_block_arguments_are_bound_in_parallel() -> None:
    # (x, y) = (y, x) three times starting from (1, 2) gives (2, 1).
    fn = _parse(
        """\
        func @swap() -> (i32, i32) {
        ^entry.0:
          %0 = const 1 : i32
          %1 = const 2 : i32
          %2 = const 0 : i64
          br ^loop.1(%0, %1, %2)
        ^loop.1(%x.3: i32, %y.4: i32, %k.5: i64):
          %6 = const 3 : i64
          %7 = lt %k.5, %6 : bool
          %8 = const 1 : i64
          %9 = add %k.5, %8 : i64
          condbr %7, ^loop.1(%y.4, %x.3, %9), ^done.2
        ^done.2:
          return %x.3, %y.4
        }
        """
    )
    assert evaluate(fn, [], []) == (np.int32(2), np.int32(1))


def test_out_of_bounds_load_raises_index_error_naming_the_index() -> None:
    a = np.zeros((2, 3), dtype=np.float32)
    with pytest.raises(IndexError, match=r"index \(2, 0\) is out of bounds for array 'a'"):
        evaluate(ROW_SUM, [2], [a])


def test_rank_zero_shape_evaluates_once_and_empty_shape_gives_empty_arrays() -> None:
    b = Builder("seven", 0)
    b.ret([b.const(7, I32), b.const(True, BOOL)])
    b.function.result_types.extend([I32, BOOL])
    seven, flag = compute(b.function, (), [])
    assert seven.shape == () and seven.dtype == np.int32 and seven[()] == 7
    assert flag.dtype == np.bool_ and bool(flag[()])
    (empty,) = compute(ROW_SUM, (0,), [np.zeros((0, 4), np.float32)])
    assert empty.shape == (0,) and empty.dtype == np.float64


def test_compute_visits_indices_in_row_major_order() -> None:
    b = Builder("lin", 2, [Capture("w", I64)])
    i, j, w = b.function.params
    b.ret([b.binary(Opcode.ADD, b.binary(Opcode.MUL, i, w), j)])
    b.function.result_types.append(I64)
    (out,) = compute(b.function, (3, 5), [5])
    assert out.tolist() == np.arange(15).reshape(3, 5).tolist()


def test_captured_scalars_convert_to_the_parameter_type() -> None:
    b = Builder("scale", 1, [Capture("s", F32), Capture("a", ArrayType(F32, 1))])
    i, s, a = b.function.params
    b.ret([b.binary(Opcode.MUL, b.load(a, [i]), s)])
    b.function.result_types.append(F32)
    x = np.array([1.0, 3.0], dtype=np.float32)
    (out,) = compute(b.function, (2,), [0.1, x])  # a Python float captured as f32
    assert out.dtype == np.float32
    assert out.tolist() == (x * np.float32(0.1)).tolist()


def test_capture_of_wrong_dtype_is_rejected() -> None:
    with pytest.raises(TypeError, match="capture 'a' expects array<f32,2>"):
        evaluate(ROW_SUM, [0], [np.zeros((2, 2), dtype=np.float64)])


@given(xs=st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=6))
def test_row_sum_matches_python_sum_in_f64(xs: list[float]) -> None:
    a = np.array([xs], dtype=np.float32)
    (got,) = evaluate(ROW_SUM, [0], [a])
    want = 0.0
    for x in a[0]:
        want += float(x)
    assert got == want or (np.isnan(got) and np.isnan(want))


@given(i=st.integers(-(2**63), 2**63 - 1), j=st.integers(-(2**63), 2**63 - 1))
def test_wrapping_and_floor_division_through_the_interpreter(i: int, j: int) -> None:
    fn = _parse(
        """\
        func @f(index %i.0: i64, index %j.1: i64) -> (i64, i64, f64) {
        ^entry.0:
          %2 = mul %i.0, %j.1 : i64
          %3 = floordiv %i.0, %j.1 : i64
          %4 = cast %i.0 : f64
          %5 = math %4 {fn = sqrt} : f64
          return %2, %3, %5
        }
        """
    )
    prod, quot, root = evaluate(fn, [i, j], [])
    assert int(prod) == (i * j + 2**63) % 2**64 - 2**63
    if j != 0 and not (i == -(2**63) and j == -1):
        assert int(quot) == i // j
    assert (np.isnan(root) and i < 0) or root == np.sqrt(np.float64(i))
    assert isinstance(root, np.float64) and root.dtype == F64.dtype


@given(x=st.floats(0.0, 1.0000000150474662e30, width=32))
def test_rsqrt_is_one_over_sqrt_in_the_operand_type(x: float) -> None:
    fn = _parse(
        """\
        func @f(index %i.0: i64, capture "x" %x.1: f32) -> (f32) {
        ^entry.0:
          %2 = math %x.1 {fn = rsqrt} : f32
          return %2
        }
        """
    )
    (got,) = evaluate(fn, [0], [np.float32(x)])
    with np.errstate(divide="ignore"):
        want = np.float32(1) / np.sqrt(np.float32(x))
    assert isinstance(got, np.float32) and got == want


def test_unverified_use_of_an_uncomputed_value_is_an_interpreter_error() -> None:
    b = Builder("bad", 0)
    ghost = Value(I64, "ghost")
    b.ret([ghost])
    b.function.result_types.append(I64)
    with pytest.raises(InterpreterError, match="run the verifier"):
        evaluate(b.function, [], [])


def test_shape_of_wrong_rank_is_rejected() -> None:
    with pytest.raises(TypeError, match="has rank 1"):
        compute(ROW_SUM, (2, 2), [np.zeros((2, 2), np.float32)])
