"""Python's and NumPy's own functions as combine and element functions
(``offload/frontend/operators.py``): every known built-in gives, in a fold, a scan, a
permute, a map and a zip_with, what the built-in itself gives in Python (``functools.reduce``,
``itertools.accumulate``, a loop), values and dtypes; an unknown built-in is still a clear
error."""

from __future__ import annotations

import functools
import inspect
import itertools
import math
import operator

import numpy as np
import pytest

import offload as ol
from offload.diagnostics import OffloadError
from offload.frontend.operators import EQUIVALENTS

pytestmark = pytest.mark.cpu

FLOATS = np.array([3.0, np.nan, -1.5, 7.25, 2.0, -0.0, 0.5])
INTS = np.array([5, 3, 12, 7, 1, 9, 6], dtype=np.int32)


def _arity(f) -> int:
    return len(inspect.signature(EQUIVALENTS[f]).parameters)


BINARY = [f for f in EQUIVALENTS if _arity(f) == 2]
UNARY = [f for f in EQUIVALENTS if _arity(f) == 1]
_FLOAT_ONLY = {operator.truediv, np.true_divide, np.fmax, np.fmin}
_INT_ONLY = {operator.and_, np.bitwise_and, operator.or_, np.bitwise_or, operator.xor}
_INT_ONLY |= {np.bitwise_xor}


def _inputs(f):
    if f in _INT_ONLY:
        return [INTS]
    if f in _FLOAT_ONLY:
        return [FLOATS]
    return [FLOATS, INTS]


def _same(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert np.array_equal(got, want, equal_nan=True), (got, want)


def _name(f) -> str:
    return f"{getattr(f, '__module__', '') or ''}.{getattr(f, '__name__', f)}"


@pytest.mark.parametrize("f", BINARY, ids=_name)
@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p], ids=["s", "p"])
def test_a_binary_builtin_folds_and_scans_as_python_does(f, compute):
    for a in _inputs(f):
        if f in (operator.floordiv, operator.mod, np.floor_divide) and a is INTS:
            a = np.array([2, 3, 1, 2], dtype=np.int32)  # no overflow, no division by zero
        z = a.dtype.type(1)
        with np.errstate(all="ignore"):
            want = functools.reduce(f, a, z)
            acc = np.array(list(itertools.accumulate(a, f)), dtype=a.dtype)
        _same(compute(ol.fold_all(f, z, a)), np.asarray(want))
        _same(compute(ol.scanl1(f, a)), acc)


@pytest.mark.parametrize("f", BINARY, ids=_name)
def test_a_binary_builtin_zips_as_python_does(f):
    for a in _inputs(f):
        b = a[::-1].copy()
        if f in (operator.floordiv, operator.mod, np.floor_divide) and a is INTS:
            a, b = np.array([2, 3, 1], np.int32), np.array([3, 2, 5], np.int32)
        with np.errstate(all="ignore"):
            want = np.array([f(x, y) for x, y in zip(a, b, strict=True)], dtype=object)
        got = ol.compute_s(ol.zip_with(f, a, b))
        assert got.dtype == np.result_type(*(type(w) for w in want[:1]))
        _same(got, np.array(list(want), dtype=got.dtype))


@pytest.mark.parametrize("f", UNARY, ids=_name)
def test_a_unary_builtin_maps_as_python_does(f):
    a = np.abs(FLOATS) if f in (np.sqrt, np.log, math.sqrt) else FLOATS
    if f in (math.sqrt, math.exp):
        a = a[~np.isnan(a)]
    with np.errstate(all="ignore"):
        want = [f(x) for x in a]
    got = ol.compute_s(ol.map(f, a))
    _same(got, np.array(want, dtype=got.dtype))
    assert got.dtype == np.asarray(want[0]).dtype or isinstance(want[0], float)


def test_max_keeps_the_first_nan_and_np_maximum_any_nan():
    a = np.array([1.0, np.nan, 3.0])
    _same(ol.compute_s(ol.scanl1(max, a)), np.array([1.0, 1.0, 3.0]))
    _same(ol.compute_s(ol.scanl1(np.maximum, a)), np.array([1.0, np.nan, np.nan]))


def test_a_builtin_combines_in_a_permute():
    to = np.array([0, 2, 0, 1, 2])
    a = np.array([4.0, 1.0, 9.0, 2.0, 3.0])
    got = ol.compute_s(ol.permute(max, np.zeros(3), lambda i: to[i], a))
    _same(got, np.array([9.0, 2.0, 3.0]))


def test_an_unknown_builtin_is_still_a_clear_error():
    with pytest.raises((TypeError, OffloadError), match="plain Python function"):
        ol.compute_s(ol.fold_all(math.hypot, 0.0, FLOATS))


def test_a_list_of_numbers_is_a_clear_error():
    with pytest.raises(OffloadError, match="list holding float values.*np.asarray"):
        ol.compute_s(ol.fold_all(operator.add, 0.0, [1.0, 2.0]))
