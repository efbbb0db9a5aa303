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
