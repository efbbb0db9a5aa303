"""``out=`` follows NumPy's ufunc ``out=`` on every target (issue 18 item 4): a read-only
array is a ValueError naming out=, a result that does not cast under ``same_kind`` is a
TypeError (as ``np.add(..., out=)`` raises), and any layout NumPy writes is accepted."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol

pytestmark = pytest.mark.cpu

A32 = np.linspace(0.0, 1.0, 12, dtype=np.float32)

COMPUTE = {"s": ol.compute_s, "p": ol.compute_p}


def half(i):
    return A32[i] * np.float32(0.5)


def pair(i):
    return A32[i], i


@pytest.mark.parametrize("target", sorted(COMPUTE))
def test_a_read_only_out_is_a_value_error_naming_out(target):
    check_read_only(COMPUTE[target])


def check_read_only(compute):
    out = np.zeros(12, np.float32)
    compute(12, half, out=out)  # warm the lane with a writeable out=
    out.flags.writeable = False
    with pytest.raises(ValueError, match=r"^out= is read-only"):
        compute(12, half, out=out)
    frozen = np.zeros(12, np.int64)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match=r"^out=\[1\] is read-only"):
        compute(12, pair, out=(np.zeros(12, np.float32), frozen))


@pytest.mark.parametrize("target", sorted(COMPUTE))
def test_out_follows_numpys_same_kind_rule(target):
    check_same_kind(COMPUTE[target])


def check_same_kind(compute):
    with pytest.raises(TypeError) as numpy_error:
        np.multiply(A32, np.float32(0.5), out=np.zeros(12, np.int32))
    assert "same_kind" in str(numpy_error.value)
    with pytest.raises(TypeError, match=r"dtype\('float32'\) to out=\'s dtype\('int32'\).*"
                       "same_kind"):  # fmt: skip
        compute(12, half, out=np.zeros(12, np.int32))
    # Same kind (float64 -> float32, int64 -> int8) and safe casts are NumPy's too.
    low = np.zeros(12, np.float32)
    compute(12, lambda i: np.float64(A32[i]) / 3.0, out=low)
    np.testing.assert_array_equal(low, (A32.astype(np.float64) / 3.0).astype(np.float32))
    wide = np.zeros(12, np.float64), np.zeros(12, np.int8)
    compute(12, pair, out=wide)
    np.testing.assert_array_equal(wide[1], np.arange(12, dtype=np.int8))
    # dtype= converts explicitly, as in NumPy.
    ints = np.zeros(12, np.int32)
    compute(12, lambda i: A32[i] * np.float32(10.0), dtype=np.int32, out=ints)
    np.testing.assert_array_equal(ints, (A32 * np.float32(10.0)).astype(np.int32))


@pytest.mark.parametrize("target", sorted(COMPUTE))
@pytest.mark.parametrize(
    "layout",
    ["fortran", "strided", "reversed"],
)
def test_out_of_any_layout_numpy_writes_is_accepted(target, layout):
    check_layout(COMPUTE[target], layout)


def check_layout(compute, layout):
    base = np.zeros((8, 12), np.float32, order="F" if layout == "fortran" else "C")
    out = {"fortran": base, "strided": base[::2, ::3], "reversed": base[::-1, ::-1]}[layout]
    b = np.arange(out.size, dtype=np.float32).reshape(out.shape)

    def f(i, j):
        return b[i, j] + np.float32(1.0)

    got = compute(out.shape, f, out=out)
    assert got is out
    np.testing.assert_array_equal(out, b + 1)


def plus_point_seven(i):
    return 0.7 + i


def add2(a, b):
    return a + b


@pytest.mark.parametrize("target", sorted(COMPUTE))
def test_dtype_with_an_out_of_another_dtype_converts_twice(target):
    # The value converts to dtype= first, then into out= (as .astype(dtype) and a store):
    # 0.7 through int64 is 0, stored as 0.0 (one conversion to float64 would keep 0.7).
    compute = COMPUTE[target]
    out = np.full(3, -1.0)
    assert compute(3, plus_point_seven, out=out, dtype=np.int64) is out
    assert out.tolist() == [0.0, 1.0, 2.0]
    x = np.array([0.7, 1.6, 2.2])
    total = np.zeros(())
    compute(ol.fold_all(add2, 0.0, x), out=total, dtype=np.int64)
    assert total[()] == 4.0  # int64(4.5), stored
    scan = np.zeros(4)
    compute(ol.scanl(add2, 0.0, x), out=scan, dtype=np.int64)
    assert scan.tolist() == [0.0, 0.0, 2.0, 4.0]
    with pytest.raises(TypeError, match="same_kind"):  # float32 into int8: NumPy's rule
        compute(3, plus_point_seven, out=np.zeros(3, np.int8), dtype=np.float32)
    with pytest.raises(ValueError, match="shape"):
        compute(3, plus_point_seven, out=np.zeros(4), dtype=np.int64)


def _doubler(x):
    def doubled(i):
        return x[i] * 2

    return doubled


@pytest.mark.parametrize("target", sorted(COMPUTE))
def test_out_is_checked_against_this_calls_result_type(target):
    # One code object, captures of other dtypes: the result type (and NumPy's same_kind
    # check of out=) is that of this call's values, not of the first call's lowering.
    compute = COMPUTE[target]
    compute(6, _doubler(np.arange(6, dtype=np.int64)))
    with pytest.raises(TypeError, match="float64"):  # float64 into int64: not same_kind
        compute(6, _doubler(np.linspace(0.3, 2.9, 6)), out=np.zeros(6, np.int64))
    compute(6, _doubler(np.arange(6, dtype=np.int16)))
    out = np.zeros(6, np.uint64)
    compute(6, _doubler(np.arange(6, dtype=np.uint16)), out=out)  # uint16 -> uint64: fine
    assert out.tolist() == [0, 2, 4, 6, 8, 10]
