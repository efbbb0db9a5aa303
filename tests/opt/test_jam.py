"""The ``jam`` pass (register blocking of GPU kernels): which kernels it blocks, the IR it
makes, and that copy ``c`` of a blocked function computes what the element function
computes at copy ``c``'s index (interpreter; the kernel mapping is checked by the simulator
and GPU lanes)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.analysis.uniform import thread_dependence
from offload.frontend.lower import fetch_captures
from offload.ir.core import Branch, Function
from offload.ir.interp import evaluate
from offload.ir.ops import Opcode
from offload.ir.parser import parse_function
from offload.ir.printer import print_function
from offload.ir.verifier import IRVerificationError, verify
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.passes.jam import JamIndex
from offload.ptx.passes.narrow import NarrowIndexArithmetic
from tests.corpus.staged import CASES, StagedCase, matmul
from tests.opt.golden import filecheck
from tests.strategies.programs import programs

pytestmark = pytest.mark.unit


def _lowered(fn, rank=2):
    low = check_and_lower(fn, rank)
    ir = run_pipeline(low.ir, CompileOptions(verify=True))
    return ir, fetch_captures(fn, low)


def _jammed(ir: Function, factors: tuple[int, ...]) -> Function:
    before = print_function(ir)
    out = JamIndex(factors).run(ir)
    verify(out)
    assert print_function(ir) == before, "the pass mutated the IR it was handed"
    return out


def _copies(factors: tuple[int, ...], picks: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The element index of every copy (row-major) for per-axis copy indices ``picks``."""
    return [tuple(picks[a][c] for a, c in enumerate(copy)) for copy in _grid(factors)]


def _grid(factors: tuple[int, ...]) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(f) for f in factors)))


def _check_copies(ir, out, factors, picks, caps, max_steps=20_000):
    """``out`` at index parameters ``picks`` returns each copy's element results in turn,
    or raises where some copy's element raises."""
    n = len(ir.result_types)
    expected, failed = [], None
    for index in _copies(factors, picks):
        try:
            expected.append(evaluate(ir, index, caps, max_steps=max_steps))
        except Exception as err:  # the element's own error: the blocked call must fail too
            failed = type(err)
    args = [i for axis in picks for i in axis]
    if failed is not None:
        with pytest.raises(Exception):  # noqa: B017 (which copy's error comes first may differ)
            evaluate(out, args, caps, max_steps=max_steps * math.prod(factors))
        return
    got = evaluate(out, args, caps, max_steps=max_steps * math.prod(factors))
    assert len(got) == n * math.prod(factors)
    for c, want in enumerate(expected):
        for g, w in zip(got[c * n : (c + 1) * n], want, strict=True):
            assert g.dtype == w.dtype
            assert g == w or (np.isnan(g) and np.isnan(w)), (c, g, w)
            assert np.signbit(g) == np.signbit(w)


@pytest.mark.parametrize("case", CASES, ids=repr)
@pytest.mark.parametrize("narrowed", [False, True])
def test_every_copy_computes_its_own_element(case: StagedCase, narrowed):
    ir, caps = _lowered(case.fn)
    if narrowed:
        ir = NarrowIndexArithmetic().run(ir)
    out = _jammed(ir, (2, 3))
    if not out.blocking:  # refused: some branch depends on an index
        deps = thread_dependence(ir)
        conds = [t.cond for b in ir.blocks if isinstance(t := b.terminator, Branch)]
        assert any(deps[c] for c in conds)
        return
    assert out.blocking == (2, 3) and out.n_index == 5 and out.rank == 2
    n0, n1 = case.shape
    rows = [(0, n0 - 1), (n0 - 1, 0), (n0 // 2, n0 // 2)]
    cols = [(0, n1 - 1, n1 // 2), (n1 - 1, 0, 0)]
    for r, c in itertools.product(rows, cols):
        _check_copies(ir, out, (2, 3), [r, c], caps)


def test_matmul_shares_each_row_read_across_the_columns_and_back():
    ir, _ = _lowered(matmul(5, 7, 37).fn)
    out = _jammed(ir, (4, 4))
    loads = [op for op in out.ops() if op.opcode is Opcode.LOAD]
    muls = [op for op in out.ops() if op.opcode is Opcode.MUL and op.result.type.is_float]
    # f0 + f1 reads per f0 * f1 multiply-adds, in every unrolled copy of the loop body
    orig_loads = sum(op.opcode is Opcode.LOAD for op in ir.ops())
    assert len(loads) == orig_loads // 2 * (4 + 4)
    assert len(muls) == orig_loads // 2 * 16
    assert len(out.result_types) == 1 and len(out.blocks[-1].terminator.values) in (16,)


def test_golden_blocked_matmul():
    a = np.ones((3, 5), np.float32)

    def dot(i, j):
        acc = np.float32(0.0)
        for k in range(a.shape[1]):
            acc += a[i, k] * a[j, k]
        return acc

    low = check_and_lower(dot, 2)
    opts = CompileOptions(verify=True, disabled_passes=frozenset({"unroll"}))
    out = _jammed(run_pipeline(low.ir, opts), (2, 2))
    filecheck(
        print_function(out),
        """
        CHECK: func @dot(index %i{{.*}}, index %i_c1_0{{.*}}, index %j{{.*}}, index %j_c0_1
        CHECK-SAME: blocking(2, 2)
        CHECK: ^loop{{.*}}(%k.{{[0-9]+}}: i64, %acc.{{[0-9]+}}: f32, %acc_c0_1.{{[0-9]+}}: f32,
        CHECK-SAME: %acc_c1_0.{{[0-9]+}}: f32, %acc_c1_1.{{[0-9]+}}: f32)
        CHECK: ^body
        CHECK-COUNT-4: load %a
        CHECK-NOT: load
        CHECK-COUNT-4: mul
        CHECK-COUNT-4: add %acc
        CHECK: return %acc{{.*}}, %acc_c0_1{{.*}}, %acc_c1_0{{.*}}, %acc_c1_1
        """,
    )


def test_a_branch_on_a_blocked_axis_refuses_and_one_on_another_axis_does_not():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)

    def f(i, j):
        acc = np.float32(0.0)
        if j > 1:
            for k in range(4):
                acc += a[i, k]
        return acc + np.float32(j)

    ir, caps = _lowered(f)
    assert _same(JamIndex((2, 2)).run(ir), ir)
    assert _same(JamIndex((1, 2)).run(ir), ir)
    out = _jammed(ir, (3, 1))  # rows only: the branch is the same for every copy
    assert out.blocking == (3, 1)
    _check_copies(ir, out, (3, 1), [(2, 0, 1), (3,)], caps)


def test_functions_it_does_not_apply_to_come_back_unchanged():
    x = np.arange(5.0)

    def f(i):
        return x[i] * 2.0

    ir, _ = _lowered(f, 1)
    assert _same(JamIndex((2, 2)).run(ir), ir)  # factors of another rank
    assert _same(JamIndex((1,)).run(ir), ir)  # nothing to block
    blocked = _jammed(ir, (3,))
    assert _same(JamIndex((2,)).run(blocked), blocked)  # already blocked


def test_blocking_prints_parses_and_verifies():
    ir, _ = _lowered(matmul(5, 7, 37).fn)
    out = _jammed(ir, (2, 3))
    text = print_function(out)
    assert " blocking(2, 3) {" in text.splitlines()[0]
    again = parse_function(text)
    verify(again)
    assert again.blocking == (2, 3) and print_function(again) == text


def test_the_verifier_checks_a_blocked_signature_and_return():
    ir, _ = _lowered(matmul(5, 7, 37).fn)
    text = print_function(_jammed(ir, (2, 2)))
    with pytest.raises(IRVerificationError, match="does not split"):
        verify(parse_function(text.replace("blocking(2, 2)", "blocking(2, 3)", 1)))
    with pytest.raises(IRVerificationError, match="return gives"):
        verify(parse_function(text.replace("blocking(2, 2)", "blocking(1, 3)", 1)))


@settings(max_examples=60, deadline=None)
@given(programs(), st.data())
def test_random_programs_keep_every_copys_values(case, data):
    fn, shape, caps = case
    ir = run_pipeline(fn, CompileOptions(verify=True))
    factors = tuple(data.draw(st.integers(1, 3)) for _ in shape)
    out = JamIndex(factors).run(ir)
    verify(out)
    if not out.blocking:
        return
    picks = [
        tuple(data.draw(st.integers(0, n - 1)) for _ in range(f)) for n, f in zip(shape, factors)
    ]
    _check_copies(ir, out, factors, picks, caps)


def _same(out, ir) -> bool:
    """``out`` is ``ir`` unchanged (a pass returns a clone: compare the printed IR)."""
    return print_function(out) == print_function(ir)


_HOIST_A = np.linspace(-1.0, 1.0, 7)
_HOIST_B = np.arange(20.0).reshape(4, 5)


def _with_hoisted_total(i, j):
    t = 0.0
    for k in range(len(_HOIST_A)):
        t += _HOIST_A[k] * _HOIST_A[k]
    return t + _HOIST_B[i, j]


def test_a_blocked_function_keeps_the_prologue_of_hoisted_work():
    # (Hypothesis found a blocked copy that had lost its prologue: 4 captures, 3 given.)
    ir, caps = _lowered(_with_hoisted_total)
    assert ir.prologue is not None, "the per-call total should be hoisted"
    out = _jammed(ir, (2, 2))
    assert out.prologue is not None
    _check_copies(ir, out, (2, 2), ((0, 3), (1, 4)), caps)


@settings(max_examples=60, deadline=None)
@given(programs(), st.data())
def test_random_programs_keep_every_copys_values_checked(case, data):
    # The checked jam follows copy 0's path while every branch finds the copies agreeing,
    # else starts the fallback: any copy indices (not only neighbours) give each its own.
    fn, shape, caps = case
    ir = run_pipeline(fn, CompileOptions(verify=True))
    factors = (data.draw(st.integers(2, 4)),) + (1,) * (len(shape) - 1)
    out = JamIndex(factors, checked=True).run(ir)
    verify(out)
    if not out.blocking:
        return
    picks = [
        tuple(data.draw(st.integers(0, n - 1)) for _ in range(f)) for n, f in zip(shape, factors)
    ]
    _check_copies(ir, out, factors, picks, caps)


def _halo(i, j):
    n = _HOIST_B.shape[0]
    if i == 0 or i >= n - 1:
        return 0.0
    return _HOIST_B[i - 1, j] + _HOIST_B[i + 1, j]


def _parity(i, j):
    if i % 2 == 0:
        t = 0.0
        for k in range(j):
            t += _HOIST_B[i, k]
        return t
    return _HOIST_B[i, j]


def test_a_checked_jam_takes_boundary_tests_only():
    ir, caps = _lowered(_halo)
    assert not JamIndex((2, 1)).run(ir).blocking
    out = _jammed_checked(ir)
    # Copies that agree (rows 1, 2) and copies that part (rows 0, 1; 3, 2): each its own.
    for picks in ([(1, 2), (3,)], [(0, 1), (2,)], [(3, 2), (4,)], [(0, 3), (0,)]):
        _check_copies(ir, out, (2, 1), picks, caps)
    parity, _ = _lowered(_parity)
    assert not JamIndex((2, 1), checked=True).run(parity).blocking


def _interior(i, j):
    if 2 * i - 1 > 1 and -i + 3 < j:
        t = 0.0
        for k in range(j):  # a loop on the other axis, in an arm of the checked branch
            t += _HOIST_B[i, k]
        return t
    return _HOIST_B[i, j]


def test_a_loop_under_a_checked_branch_is_not_checked_again():
    # The loop's condition depends on the row only through the checked branch: the copies
    # agree there, so the counter is one value, not one per copy.
    ir, caps = _lowered(_interior)
    out = _jammed_checked(ir)
    checks = [b for b in out.blocks if b.hint == "agree"]
    assert len(checks) == 1
    for picks in ([(1, 2), (3,)], [(2, 3), (1,)], [(3, 2), (0,)]):
        _check_copies(ir, out, (2, 1), picks, caps)


def _jammed_checked(ir: Function) -> Function:
    out = JamIndex((2, 1), checked=True).run(ir)
    verify(out)
    assert out.blocking == (2, 1)
    return out
