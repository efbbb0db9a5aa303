"""Delayed arrays lower to ONE fused element function with one capture per leaf array."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload import delayed as ol
from offload.frontend.lower import delayed_key, fetch_captures, lower
from offload.ir.interp import compute
from offload.ir.types import ArrayType
from offload.ir.verifier import verify

pytestmark = pytest.mark.unit

X = np.arange(12, dtype=np.float32).reshape(3, 4)
Y = np.random.default_rng(0).standard_normal((3, 4))
K = 3.0


def _run(d: Any) -> tuple[np.ndarray, ...]:
    lowered = lower(d, d.ndim)
    verify(lowered.ir)
    return compute(lowered.ir, d.shape, fetch_captures(d, lowered))


def _double(x: Any) -> Any:
    return x * 2.0


def _add(a: Any, b: Any) -> Any:
    return a + b


def test_map_of_zip_with_is_one_function_with_one_capture_per_leaf() -> None:
    d = ol.map(_double, ol.zip_with(_add, X, Y))
    lowered = lower(d, 2)
    arrays = [c for c in lowered.ir.captures if isinstance(c.type, ArrayType)]
    assert len(arrays) == 2
    assert len(lowered.ir.captures) == 2
    np.testing.assert_allclose(_run(d)[0], (X + Y) * 2.0)


def test_float32_map_stays_float32() -> None:
    d = ol.map(_double, X)
    assert d.dtype == np.float32
    np.testing.assert_array_equal(_run(d)[0], X * 2.0)


def test_from_function_captures_globals_of_its_function() -> None:
    d = ol.from_function((2, 3), lambda i, j: i * K + j)
    np.testing.assert_array_equal(_run(d)[0], np.fromfunction(lambda i, j: i * K + j, (2, 3)))


def test_backpermute_transposes() -> None:
    d = ol.backpermute((4, 3), lambda i, j: (j, i), X)
    np.testing.assert_array_equal(_run(d)[0], X.T)


def test_backpermute_with_negative_source_index_wraps_like_python() -> None:
    d = ol.backpermute((3, 4), lambda i, j: (i, -1 - j), X)
    np.testing.assert_array_equal(_run(d)[0], X[:, ::-1])


def test_traverse_reads_neighbours_through_the_getter() -> None:
    d = ol.traverse(X, lambda sh: (sh[0], sh[1] - 1), lambda get, i, j: get(i, j + 1) - get(i, j))
    assert d.shape == (3, 3)
    np.testing.assert_array_equal(_run(d)[0], X[:, 1:] - X[:, :-1])


def test_traverse_of_traverse_with_the_same_function_is_not_recursion() -> None:
    def step(get: Any, i: int) -> Any:
        return get(i) + get(i + 1)

    v = np.arange(6.0)
    d = ol.traverse(ol.traverse(v, lambda sh: (sh[0] - 1,), step), lambda sh: (sh[0] - 1,), step)
    inner = v[:-1] + v[1:]
    np.testing.assert_array_equal(_run(d)[0], inner[:-1] + inner[1:])


def test_reshape_is_row_major() -> None:
    d = ol.reshape(ol.map(_double, X), (2, 6))
    np.testing.assert_array_equal(_run(d)[0], (X * 2.0).reshape(2, 6))


def test_reshape_to_a_different_size_is_rejected() -> None:
    with pytest.raises(Exception, match="cannot reshape"):
        ol.reshape(X, (5, 5))


def test_capture_paths_are_relative_so_new_leaves_reuse_a_lowering() -> None:
    d1 = ol.zip_with(_add, X, Y)
    x2 = X + 100
    d2 = ol.zip_with(_add, x2, Y)
    assert delayed_key(d1) == delayed_key(d2)
    lowered = lower(d1, 2)
    got = compute(lowered.ir, (3, 4), fetch_captures(d2, lowered))[0]
    np.testing.assert_allclose(got, x2 + Y)


def test_delayed_key_differs_for_other_functions_or_dtypes() -> None:
    base = delayed_key(ol.map(_double, X))
    assert delayed_key(ol.map(_double, X.astype(np.float64))) != base
    assert delayed_key(ol.map(lambda x: x * 2.0, X)) != base


def test_tuple_valued_delayed_array_has_several_dtypes() -> None:
    d = ol.map(lambda x: (x, x > 3), X)
    assert d.dtypes == (np.dtype(np.float32), np.dtype(bool))
    a, b = _run(d)
    np.testing.assert_array_equal(b, X > 3)
