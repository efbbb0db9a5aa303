"""Reductions over views and elementwise expressions (issue 17 item 2), fused into one loop
with no temporary, against NumPy: accumulation dtypes, NaN rules, and NumPy's pairwise
summation order bit for bit up to 128 elements (the documented difference beyond that,
and for BLAS-backed float dot products, is tested as a bound)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.diagnostics import OffloadError, TypeMismatch, UnresolvedCall, UnsupportedSyntax
from offload.frontend.lower import fetch_captures
from offload.ir.interp import compute
from offload.ir.ops import Opcode
from offload.lowering import check_and_lower
from tests.frontend.views_support import TARGETS, assert_same, check, reference, run

RNG = np.random.default_rng(7)
A = RNG.random((6, 130)) * 10 - 5
A32 = A.astype(np.float32)
C = RNG.random((4, 130))
I8 = RNG.integers(-128, 127, (6, 20), dtype=np.int8)
U8 = RNG.integers(0, 255, (6, 20), dtype=np.uint8)
BOOLS = RNG.random((6, 20)) > 0.4
NANS = A[:, :12].copy()
NANS[1, 3] = NANS[1, 7] = np.nan
NANS[3, 0] = np.nan
TIES = np.array([[1.0, 3.0, 3.0, -2.0, -2.0, 0.5]] * 6)
M = RNG.integers(-9, 9, (4, 5)).astype(np.int64)


def sums_up_to_128(i: int, j: int) -> Any:
    return np.sum(A[i, : j * 37 + 9]) + np.sum(A[i, ::-3])


def float32_sum_stays_float32(i: int, j: int) -> Any:
    return np.sum(A32[i, j : j * 30 : 2]) + np.sum(A32[i, :7])


def int_sums_widen(i: int, j: int) -> Any:
    return np.sum(I8[i, j:]), np.sum(U8[i]), np.sum(BOOLS[i, j:])


def fused_distance(i: int, j: int) -> Any:
    return np.sum((A[i, :100] - C[j, :100]) ** 2)


def window_sum_and_min(i: int, j: int) -> Any:
    w = A[i : i + 3, j : j + 3]
    return np.sum(w) + np.min(w) * 10 + np.sum(A32[i : i + 2, j : j + 9] * np.float32(2))


def products(i: int, j: int) -> Any:
    return np.prod(I8[i, j : j + 3]), np.prod(A[i, :j]), np.prod(BOOLS[i, :j])


def extremes(i: int, j: int) -> Any:
    return np.max(I8[:, j]), np.amin(A[i]), np.amax(U8[i, j:]), np.min(BOOLS[i])


def extremes_propagate_nan(i: int, j: int) -> Any:
    return np.max(NANS[i, j:]), np.min(NANS[i])


def arg_extremes(i: int, j: int) -> Any:
    return np.argmin(A[i]), np.argmax(I8[i, ::-1]), np.argmax(TIES[i, j:]), np.argmin(TIES[i])


def arg_extremes_find_the_first_nan(i: int, j: int) -> Any:
    return np.argmax(NANS[i, j:]), np.argmin(NANS[i])


def means(i: int, j: int) -> Any:
    return np.mean(I8[i]), np.mean(A32[i, : j + 1]), np.mean(BOOLS[i])


def all_any(i: int, j: int) -> Any:
    return np.any(I8[i] > 120), np.all(BOOLS[i, j : j + 2]), np.all(A[i] > -6.0)


def variances(i: int, j: int) -> Any:
    # NumPy's _var: the mean, the pairwise sum of squared deviations, / max(n - ddof, 0)
    return (
        np.var(A[i, : 4 * j + 1]),
        A32[i, j + 2 :].std(ddof=1),  # (at most 128 values: NumPy's summation order)
        np.std(I8[i], ddof=j % 3),
        U8[i, : j + 1].var() + np.var(BOOLS[i]),
        np.std(A32[i, : j + 2] * 2 - 1),
    )


def count_nonzero(i: int, j: int) -> Any:
    # an int64 (NumPy's intp): the int8 it meets widens to it
    return np.count_nonzero(A[i] > 0) + np.count_nonzero(I8[i, j:]) * I8[i, j] // 64


def integer_dots(i: int, j: int) -> Any:
    return np.dot(I8[i], I8[j]) + (U8[i, :5] @ I8[j, 5:10])


def matrix_vector(i: int, j: int) -> Any:
    mv = M @ M[i % 4, :]
    vm = M[i % 4, :4] @ M
    return mv[j % 4] * 1000 + vm[j % 5] + np.sum(M[:, :4] @ M[:, j % 5])


def matrix_matrix(i: int, j: int) -> Any:
    return (M[:, :4] @ M[:4, :])[i % 4, j % 5]


def ufuncs_of_views(i: int, j: int) -> Any:
    return np.sum(np.sqrt(np.abs(A[i, :j]))) + np.max(-A[i])


TRIPLE = (1, 2.5, 3)


def builtin_sum_adds_in_order(i: int, j: int) -> Any:
    """Python's sum: in order from 0, in the elements' own arithmetic (int8 wraps)."""
    return sum(A32[i, j:]), sum(I8[i, : j + 1], 10), sum(TRIPLE), sum(A[i, ::-1] * 0.5)


def builtin_max_min_of_sequences(i: int, j: int) -> Any:
    """Python's max/min over a sequence: ``item > best`` from the first (NaNs: NANS)."""
    t = [A[i, 0], 2.0, A[i, 1] * 3]
    return max(NANS[i, j % 12 :]), min(I8[i, j:]), max(t) - min(t), max(A32[i, : j + 1] * 2)


def array_methods(i: int, j: int) -> Any:
    row = A[i, : j + 3]
    return (
        row.sum() + (row * 2).max() + A[:, j].argmin() + M.mean() + (row > 0).any(),
        I8[i].dot(I8[j]) + I8[i, j:].prod() + U8[i].min(),
    )


CASES = [
    array_methods,
    builtin_sum_adds_in_order,
    builtin_max_min_of_sequences,
    sums_up_to_128,
    float32_sum_stays_float32,
    int_sums_widen,
    fused_distance,
    window_sum_and_min,
    products,
    extremes,
    extremes_propagate_nan,
    arg_extremes,
    arg_extremes_find_the_first_nan,
    means,
    all_any,
    count_nonzero,
    variances,
    integer_dots,
    matrix_vector,
    matrix_matrix,
    ufuncs_of_views,
]


def _check_all(target: str, fn: Any, shape: tuple[int, ...]) -> None:
    """Like ``check`` for functions returning tuples (one output per element)."""
    outs = run(target, fn, shape)
    outs = outs if isinstance(outs, tuple) else (outs,)
    with np.errstate(all="ignore"):  # NumPy scalars wrap with a warning; so do kernels
        want = [fn(i, j) for i in range(shape[0]) for j in range(shape[1])]
    if not isinstance(want[0], tuple):
        want = [(w,) for w in want]
    for k, got in enumerate(outs):
        assert_same(np.asarray(got), np.array([w[k] for w in want]).reshape(shape))


CPU_CASES = [
    builtin_sum_adds_in_order,
    builtin_max_min_of_sequences,
    sums_up_to_128,
    int_sums_widen,
    fused_distance,
    extremes_propagate_nan,
    arg_extremes,
    means,
    count_nonzero,
    variances,
    matrix_vector,
]
"""What compute_s and compute_p compile too (each kernel costs seconds of numba time on
a loaded 2-core machine; the interpreter and the simulator run every case)."""


@pytest.mark.parametrize("target", [t for t in TARGETS if t.values[0] in ("interp", "g")])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_reduction_matches_numpy_exactly(target: str, fn: Any) -> None:
    _check_all(target, fn, (4, 4))


@pytest.mark.parametrize("target", [t for t in TARGETS if t.values[0] in ("s", "p")])
@pytest.mark.parametrize("fn", CPU_CASES, ids=lambda f: f.__name__)
def test_reduction_matches_numpy_exactly_on_the_cpu(target: str, fn: Any) -> None:
    _check_all(target, fn, (4, 4))


def long_sum(i: int, j: int) -> Any:
    return np.sum(A[i, j:])


def float_dot(i: int, j: int) -> Any:
    return np.dot(A[i], C[j]) + np.linalg.norm(A[i, j:] - C[j, j:])


@pytest.mark.parametrize("target", [t for t in TARGETS if t.values[0] != "p"])
@pytest.mark.parametrize("fn", [long_sum, float_dot], ids=lambda f: f.__name__)
def test_documented_order_differences_stay_within_rounding(target: str, fn: Any) -> None:
    """Over 128 elements (NumPy splits pairwise) and float dot products (NumPy calls BLAS)
    the last bits may differ: the same dtype, within a few ulps of the sum of magnitudes."""
    got, want = run(target, fn, (4, 4)), reference(fn, (4, 4))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-12)


@pytest.mark.unit
def test_reduction_is_one_loop_with_no_temporary() -> None:
    ir = check_and_lower(fused_distance, 2).ir
    loads = [op for op in ir.ops() if op.opcode is Opcode.LOAD]
    # one load of each operand per accumulator slot: no array is built
    assert {op.operands[0] for op in loads} == set(ir.entry.args[2:4])


@pytest.mark.unit
@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 128),
    lo=st.integers(-140, 140),
    step=st.integers(-5, 5).filter(bool),
    dtype=st.sampled_from([np.float64, np.float32, np.int8, np.uint16, np.bool_]),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_sums_of_random_views_match_numpy_bit_for_bit(
    n: int, lo: int, step: int, dtype: Any, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    base = (rng.standard_normal(n) * 100).astype(dtype)

    def f(k: int) -> Any:
        v = base[lo::step]
        return np.sum(v), np.mean(v[: k + 1]), np.any(v)

    lowered = check_and_lower(f, 1)
    got = compute(lowered.ir, (2,), fetch_captures(f, lowered))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the mean of an empty view is NaN, with a warning
        want = [f(k) for k in range(2)]
    for k in range(3):
        assert_same(np.asarray(got[k]), np.array([w[k] for w in want]))


def sum_of_a_number(i: int) -> Any:
    return np.sum(A[0, i])


def sum_with_axis(i: int) -> Any:
    return np.sum(A, axis=0)[i]


def method_with_axis(i: int) -> Any:
    return A[i].sum(axis=0)


def method_of_a_number(i: int) -> Any:
    x = A[i, 0]
    return x.sum()


def unsupported_method(i: int) -> Any:
    return A[i].cumsum()[0]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("fn", "cls", "message"),
    [
        (sum_of_a_number, TypeMismatch, r"np.sum\(\) needs an array, a view"),
        (sum_with_axis, UnsupportedSyntax, "keyword arguments to 'np.sum'"),
        (method_with_axis, UnsupportedSyntax, r"keyword arguments to '.sum\(\)'"),
        (method_of_a_number, TypeMismatch, "has no attribute 'sum'"),
        (unsupported_method, UnresolvedCall, "method calls are not supported"),
    ],
)
def test_unsupported_reductions_are_located_errors(fn: Any, cls: type, message: str) -> None:
    with pytest.raises(cls, match=message) as err:
        check_and_lower(fn, 1)
    assert "test_reductions.py" in str(err.value) and "^" in str(err.value)


@pytest.mark.unit
def test_reduction_results_cannot_be_returned_as_arrays() -> None:
    def f(i: int) -> Any:
        return M @ M[i % 4, :]

    with pytest.raises(OffloadError, match="cannot return"):
        check_and_lower(f, 1)


@pytest.mark.unit
def test_reference_is_numpy() -> None:
    check("interp", sums_up_to_128, (2, 2))


def _window_fn(base: Any, s0: slice, s1: slice) -> Any:
    a0, b0, c0 = s0.start, s0.stop, s0.step
    a1, b1, c1 = s1.start, s1.stop, s1.step

    def f(k: int) -> Any:
        w = base[a0:b0:c0, a1:b1:c1]
        return np.sum(w), np.max(w), np.argmin(w), np.prod(w[:, :2]), np.sum(w[k % 2] * 2.5)

    return f


BOUND = st.integers(-9, 9)


@pytest.mark.unit
@settings(max_examples=40, deadline=None)
@given(
    s0=st.builds(slice, BOUND, BOUND, st.integers(-3, 3).filter(bool)),
    s1=st.builds(slice, BOUND, BOUND, st.integers(-3, 3).filter(bool)),
    dtype=st.sampled_from([np.float64, np.float32, np.int16, np.uint8]),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_2d_views_reduce_like_numpy(s0: slice, s1: slice, dtype: Any, seed: int) -> None:
    """Random 2-D windows (negative steps, bounds past either end) of a captured array,
    reduced: the same values and dtypes as NumPy (exact: at most 49 elements)."""
    base = (np.random.default_rng(seed).standard_normal((7, 7)) * 20).astype(dtype)
    w = base[s0, s1]
    if w.size == 0 or w.shape[0] < 2:
        return  # NumPy raises for max/argmin of nothing (undefined here)
    f = _window_fn(base, s0, s1)
    lowered = check_and_lower(f, 1)
    got = compute(lowered.ir, (2,), fetch_captures(f, lowered))
    with np.errstate(all="ignore"):
        want = [f(k) for k in range(2)]
    for k in range(5):
        assert_same(np.asarray(got[k]), np.array([x[k] for x in want]))


SHORT = np.arange(10.0).reshape(2, 5)


def lengths_differ_at_run_time(i: int) -> Any:
    return np.sum(A[i, :5] * SHORT[i % 2, : 5 - i])


def dot_lengths_differ_at_run_time(i: int) -> Any:
    return np.dot(SHORT[i % 2, : 5 - i], A[i, :5])


@pytest.mark.unit
@pytest.mark.parametrize("fn", [lengths_differ_at_run_time, dot_lengths_differ_at_run_time])
def test_lengths_that_differ_at_run_time_are_an_out_of_bounds_read(fn: Any) -> None:
    """NumPy raises for operands of different lengths; where the lengths are known only at
    run time the shorter operand is read past its end, at its array's extent: the
    interpreter (the specification) reports an out-of-bounds read."""
    np.testing.assert_allclose(run("interp", fn, (1,)), [fn(0)], rtol=1e-15)  # 5 and 5
    with pytest.raises(IndexError, match="out of bounds for array 'SHORT'"):
        run("interp", fn, (2,))  # row 1: lengths 5 and 4


@pytest.mark.cpu
def test_bounds_check_reports_lengths_that_differ_at_run_time() -> None:
    import offload as ol

    saved = ol.config.bounds_check
    try:
        ol.config.bounds_check = True
        with pytest.raises(IndexError, match="out-of-bounds read SHORT") as err:
            ol.compute_s(2, lengths_differ_at_run_time)
        assert "test_reductions.py" in str(err.value)
    finally:
        ol.config.bounds_check = saved
