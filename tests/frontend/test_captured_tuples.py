"""Captured tuples and shapes (issue 17 item 5): ``sh = a.shape`` then ``sh[0]`` or
``n, m = sh``; tuples of numbers captured from a closure or a global, indexed by constants
or by values known at run time, unpacked and measured — each item re-read every call, the
length guarded."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import offload as ol
from offload.diagnostics import TypeMismatch
from offload.lowering import check_and_lower
from tests.frontend.views_support import TARGETS, check

A = np.arange(12.0).reshape(3, 4)
SH = A.shape
W = (0.25, 0.5, np.float32(0.25))
NEST = ((1, 2), (3.5, True))
ARRAYS = (A, A[::-1].copy())


def shape_tuple(i: int, j: int) -> Any:
    sh = A.shape
    n, m = sh
    return sh[0] * 100 + m + n - sh[-1] + len(sh)


def global_tuples(i: int, j: int) -> Any:
    r, c = SH
    return r * c + W[1] * W[-1] + len(W) + NEST[1][0] + NEST[0][1] + NEST[1][1] * i


def tuple_of_arrays(i: int, j: int) -> Any:
    a, b = ARRAYS
    return a[i, j] - b[i, j] + ARRAYS[1][i][j]


T = (3, 1, 4, 1, 5)
STENCIL = (0.25, 0.5, 0.25)
MIXED = (1, 2.5, True)


def tuple_indexed_at_run_time(i: int, j: int) -> Any:
    s = 0
    for k in range(len(T)):
        s += T[k] * T[(i + j + k) % len(T)]
    return s + T[-(j % 5) - 1] + T[np.int32(i)] * 10


def weights_indexed_by_a_loop(i: int, j: int) -> Any:
    acc = 0.0
    for k in range(-1, 2):
        acc += STENCIL[k + 1] * A[i, min(max(j + k, 0), 3)]
    return acc


def mixed_items_join(i: int, j: int) -> Any:
    return MIXED[(i + j) % 3] * 2


def _weights(t: tuple[float, ...]) -> Any:
    def f(i: int, j: int) -> Any:
        x, y = t
        return x * i + y * j + t[0] * len(t)

    return f


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "fn",
    [
        shape_tuple,
        global_tuples,
        tuple_of_arrays,
        _weights((1.5, -2.0)),
        tuple_indexed_at_run_time,
        weights_indexed_by_a_loop,
        mixed_items_join,
    ],
    ids=lambda f: f.__name__,
)
def test_captured_tuple_matches_cpython(target: str, fn: Any) -> None:
    check(target, fn, (3, 4))


@pytest.mark.cpu
def test_a_changed_closure_tuple_is_never_stale() -> None:
    for t in ((1, 2), (3, 4), (0.5, 7)):
        f = _weights(t)
        want = np.array([[f(i, j) for j in range(4)] for i in range(3)])
        np.testing.assert_array_equal(ol.compute_s((3, 4), f), want)


@pytest.mark.cpu
def test_a_rebound_global_tuple_of_another_length_recompiles() -> None:
    global W
    saved = W
    try:
        for w in ((1.0, 2.0, np.float32(3.0)), (1.0, 2.0, np.float32(3.0), 4)):
            W = w
            want = np.array([[global_tuples(i, j) for j in range(4)] for i in range(3)])
            np.testing.assert_array_equal(ol.compute_s((3, 4), global_tuples), want)
    finally:
        W = saved


def tuple_index_out_of_range(i: int) -> Any:
    return W[3]


def tuple_of_arrays_at_run_time(i: int) -> Any:
    return ARRAYS[i % 2][0, 0]


def tuple_index_a_float(i: int) -> Any:
    return W[i * 0.5]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (tuple_index_out_of_range, "tuple index 3 out of range"),
        (tuple_of_arrays_at_run_time, "indexed by a value known only at run time must hold"),
        (tuple_index_a_float, "tuple indices must be integers"),
    ],
)
def test_tuple_misuse_is_a_located_error(fn: Any, message: str) -> None:
    with pytest.raises(TypeMismatch, match=message) as err:
        check_and_lower(fn, 1)
    assert "test_captured_tuples.py" in str(err.value)
