"""A strong integer constant converted to another integer type wraps as NumPy's astype
does (found by the differential fuzzer: the interpreter crashed on the unwrapped value)."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from offload.ir.interp import compute
from offload.lowering import check_and_lower

CASES = {
    "int8_of_uint8_200": lambda i: np.int8(np.uint8(200)) + i,
    "uint8_of_int8_min": lambda i: np.uint8(np.int8(-128)) + i,
    "uint64_of_int64_minus_one": lambda i: np.uint64(np.int64(-1)) - i,
    "int16_of_uint16_max": lambda i: np.int16(np.uint16(65535)) * i,
}


def _want(fn):
    return np.array([fn(i) for i in range(3)])


@pytest.mark.unit
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_interpreter_wraps_a_converted_constant(name):
    fn = CASES[name]
    (got,) = compute(check_and_lower(fn, 1).ir, (3,), [])
    want = _want(fn)
    assert got.dtype == want.dtype and (got == want).all()


@pytest.mark.cpu
@pytest.mark.parametrize("name", sorted(CASES))
def test_compute_s_wraps_a_converted_constant(name):
    fn = CASES[name]
    got, want = ol.compute_s(3, fn), _want(fn)
    assert got.dtype == want.dtype and (got == want).all()
