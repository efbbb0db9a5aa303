"""Loops over a range that depends on the element (a CSR row: sums, a max that keeps the
first NaN, a bool carried and tested in the loop, int8 wrap-around, a step of 3), shared by
the sim lane (tests/sim) and the gpu lane (tests/gpu): compute_g gives CPython's values bit
for bit. ``check_case`` takes the backend's name (``gpu-sim`` or ``gpu``)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import offload as ol
from offload import driver

_rng = np.random.default_rng(5)
_lengths = np.array([0, 1, 2, 3, 5, 8, 13, 31, 32, 33, 64, 70, 0, 4], dtype=np.int64)
rowptr = np.concatenate([[0], np.cumsum(_lengths)]).astype(np.int64)
_nnz = int(rowptr[-1])
col = _rng.integers(0, 16, _nnz).astype(np.int64)
val = _rng.standard_normal(_nnz).astype(np.float32)
val[[3, 40, 41]] = [np.nan, -0.0, np.inf]
x = _rng.standard_normal(16).astype(np.float32)
small = _rng.integers(-100, 100, _nnz).astype(np.int8)
ROWS = len(_lengths)


def row_dot(i):
    acc = np.float32(0.0)
    for k in range(rowptr[i], rowptr[i + 1]):
        acc += val[k] * x[col[k]]
    return acc


def row_stats(i):
    m = np.float32(-np.inf)
    n = 0
    pos = False
    for k in range(rowptr[i], rowptr[i + 1]):
        v = val[k]
        m = max(m, v)
        n = (n * 3 + int(v > 0)) % 1000003
        pos = pos or v > 1.0
    return m, n, pos


def row_decay(i):
    acc = 0.5
    for k in range(rowptr[i], rowptr[i + 1], 3):
        acc = acc * 0.75 + val[k] * x[col[k]] - k
    return acc


def row_int8(i):
    s = np.int8(1)
    for k in range(rowptr[i], rowptr[i + 1]):
        s = s * np.int8(3) + small[k]
    return s


CASES = {"row_dot": row_dot, "row_stats": row_stats, "row_decay": row_decay, "row_int8": row_int8}


@pytest.fixture
def fresh() -> Iterator[None]:
    driver.clear_dispatch_table()
    yield
    driver.clear_dispatch_table()


def check_case(fn_name: str, name: str) -> None:
    fn = CASES[fn_name]
    with np.errstate(all="ignore"):  # int8 wraps, as NumPy's does
        want = [fn(i) for i in range(ROWS)]
    got = ol.compute_g(ROWS, fn)
    outs = got if isinstance(got, tuple) else (got,)
    for j, out in enumerate(outs):
        column = [w[j] if isinstance(w, tuple) else w for w in want]
        expected = np.array(column, dtype=np.asarray(out).dtype)
        assert np.array_equal(np.asarray(out), expected, equal_nan=expected.dtype.kind == "f")
        if expected.dtype.kind == "f":
            assert np.array_equal(np.signbit(np.asarray(out)), np.signbit(expected))
    assert driver._LANES[id(fn.__code__)].backend.name == name
