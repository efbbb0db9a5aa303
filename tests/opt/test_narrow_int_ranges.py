"""Narrow integer types wrap: a value >= 0 in int8 plus one >= 0 may be negative, so the
negative-index wrap of a load must stay (issue 19, item 20), and every range fact of a
narrow-typed op holds for every value the op can compute in its own width."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import offload as ol
from offload.analysis.range_domain import Range, type_range
from offload.analysis.range_transfer import transfer
from offload.frontend.lower import fetch_captures
from offload.ir.core import Op, Value
from offload.ir.interp import compute
from offload.ir.ops import Opcode
from offload.ir.semantics import eval_op
from offload.ir.types import I8, I16, I64, U8, ScalarType
from offload.lowering import check_and_lower

B = np.arange(200.0)


def _int8_sum_index(i: int) -> float:
    return float(B[i + np.int8(100)])


def _int8_product_index(i: int) -> float:
    return float(B[i * np.int8(3)])


def _expected(fn: object, n: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.array([fn(i) for i in range(n)])  # type: ignore[operator]


@pytest.mark.unit
@pytest.mark.parametrize("fn", [_int8_sum_index, _int8_product_index])
def test_narrow_sum_index_keeps_negative_wrap_in_interpreter(fn: object) -> None:
    lowered = check_and_lower(fn, 1)  # type: ignore[arg-type]
    (got,) = compute(lowered.ir, (100,), fetch_captures(fn, lowered))
    np.testing.assert_array_equal(got, _expected(fn, 100))


@pytest.mark.cpu
@pytest.mark.parametrize("fn", [_int8_sum_index, _int8_product_index])
def test_int8_sum_that_wraps_negative_reads_from_the_end_on_compute_s(fn: object) -> None:
    # i + np.int8(100) is int8 (NEP 50): 128 wraps to -128, which Python reads as B[72].
    np.testing.assert_array_equal(ol.compute_s(100, fn), _expected(fn, 100))


_NARROW = [I8, U8, I16]
_OPS = [
    Opcode.ADD,
    Opcode.SUB,
    Opcode.MUL,
    Opcode.NEG,
    Opcode.ABS,
    Opcode.SHL,
    Opcode.FLOORDIV,
    Opcode.FLOORMOD,
    Opcode.CAST,
]


@st.composite
def _case(draw: st.DrawFn) -> tuple[Opcode, ScalarType, Range, Range]:
    opcode = draw(st.sampled_from(_OPS))
    t = draw(st.sampled_from(_NARROW))
    full = type_range(t)

    def rng() -> Range:
        lo = draw(st.integers(full.lo, full.hi))
        return Range(lo, draw(st.integers(lo, min(full.hi, lo + 40))))

    return opcode, t, rng(), rng()


@pytest.mark.unit
@given(_case())
def test_narrow_range_transfer_contains_every_wrapped_result(
    case: tuple[Opcode, ScalarType, Range, Range],
) -> None:
    opcode, t, ra, rb = case
    unary = opcode in (Opcode.NEG, Opcode.ABS)
    src_t = I64 if opcode is Opcode.CAST else t
    if opcode is Opcode.CAST:  # an int64 operand cast down to t
        ra = Range(ra.lo * 3 - 200, ra.hi * 3 + 200)
    if opcode is Opcode.SHL:
        rb = Range(rb.lo % t.bits, rb.lo % t.bits)
    n_operands = 1 if unary or opcode is Opcode.CAST else 2
    op = Op(opcode, [Value(src_t)] * n_operands, Value(t))
    r = transfer(op, [ra] if unary or opcode is Opcode.CAST else [ra, rb], t)
    for a in range(ra.lo, ra.hi + 1):
        if unary or opcode is Opcode.CAST:
            got = int(eval_op(opcode, {}, [src_t.dtype.type(a)], t))
            assert r.lo <= got <= r.hi, (opcode, t, ra, a, got, r)
            continue
        for c in range(rb.lo, rb.hi + 1):
            ops = [t.dtype.type(a), t.dtype.type(c)]
            got = int(eval_op(opcode, {}, ops, t))
            assert r.lo <= got <= r.hi, (opcode, t, ra, rb, a, c, got, r)
