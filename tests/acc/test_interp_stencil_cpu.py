"""Stencils on compute_s and compute_p against the interpreter and ``numpy.pad``.

A stencil is an element node: its kernel is IR, and ``fold_reference.interpret`` runs
that kernel itself on the interpreter (boundary index arithmetic included). This adds to
``test_structural_stencil_cpu`` (compute_p, offsets of 1, axes of 2 or more for
``mirror``): both CPU targets, offsets of 2 that reach past an axis of 1 or 2 elements
(``mirror`` reflecting more than once, ``wrap`` going round more than once), int8 to
float64 with wrap-around, bools, and tuple elements with a tuple ``constant``. Integer
and bool stencils equal NumPy exactly; float ones too, as the stencil's expression is
evaluated the same way on each padded slice.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import offload as ol
from tests.acc.fold_reference import interpret
from tests.acc.interp_cases import TARGETS, array, same_bits

pytestmark = pytest.mark.cpu

PAD = {"clamp": "edge", "mirror": "reflect", "wrap": "wrap"}


def wide1(get: Any) -> Any:
    return get(-2) - 3 * get(1) + get(2)


def wide2(get: Any) -> Any:
    return get(-2, 1) * get(0, 0) + get(1, -2)


def wide3(get: Any) -> Any:
    return get(2, 0, -1) - get(-1, 2, 0) + get(0, 0, 2)


def flips(get: Any) -> Any:
    return get(-2) ^ get(1)


def pairs(get: Any) -> Any:
    left, right = get(-2), get(1)
    return (left[0] + right[0], left[1] * get(2)[1])


def padded(a: np.ndarray[Any, Any], boundary: str, value: Any) -> np.ndarray[Any, Any]:
    if boundary == "constant":
        return np.pad(a, 2, mode="constant", constant_values=value)
    return np.pad(a, 2, mode=PAD[boundary])  # type: ignore[call-overload,no-any-return]


def numpy_stencil(fn: Any, parts: list[np.ndarray[Any, Any]], boundary: str, value: Any) -> Any:
    """``fn`` over slices of the padded arrays (a tuple element: one array per component)."""
    shape = parts[0].shape
    pads = [padded(p, boundary, v) for p, v in zip(parts, value, strict=True)]

    def get(*d: int) -> Any:
        sl = tuple(slice(2 + k, 2 + k + n) for k, n in zip(d, shape, strict=True))
        got = tuple(p[sl] for p in pads)
        return got[0] if len(got) == 1 else got

    with np.errstate(all="ignore"):
        return fn(get)


@settings(max_examples=30)
@given(
    data=st.data(),
    rank=st.integers(1, 3),
    dims=st.lists(st.integers(1, 5), min_size=3, max_size=3),
    boundary=st.sampled_from(["clamp", "mirror", "wrap", "constant"]),
    dtype=st.sampled_from(["int8", "uint16", "int64", "float32", "float64"]),
    target=st.sampled_from(sorted(TARGETS)),
)
def test_stencils_equal_the_interpreter_and_numpy_pad(
    data: st.DataObject, rank: int, dims: list[int], boundary: str, dtype: str, target: str
) -> None:
    shape = tuple(dims[:rank])
    a = array(data, dtype, shape)
    fn = {1: wide1, 2: wide2, 3: wide3}[rank]
    value = np.dtype(dtype).type(7)
    b = ol.constant(value) if boundary == "constant" else boundary
    node = ol.stencil(fn, a, b)
    got = TARGETS[target](node)
    assert same_bits(got, interpret(node))
    want = numpy_stencil(fn, [a], boundary, [value])
    assert same_bits(got, want.astype(got.dtype))
    assert got.dtype == np.result_type(a.dtype, a.dtype)


@pytest.mark.parametrize("boundary", ["clamp", "mirror", "wrap", "constant"])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_bool_and_tuple_stencils_equal_the_interpreter_and_numpy_pad(boundary: str, n: int) -> None:
    rng = np.random.default_rng(n)
    flags = rng.integers(0, 2, n).astype(bool)
    xs, ks = rng.standard_normal(n).astype(np.float32), rng.integers(-9, 9, n).astype(np.int16)
    cases = [
        (flips, flags, [flags], [True]),
        (pairs, (xs, ks), [xs, ks], [np.float32(0.5), np.int16(3)]),
    ]
    for fn, a, parts, value in cases:
        b = ol.constant(tuple(value) if len(value) > 1 else value[0])
        node = ol.stencil(fn, a, b if boundary == "constant" else boundary)
        want = numpy_stencil(fn, parts, boundary, value)
        spec = interpret(node)
        assert same_bits(spec, want)
        for target in TARGETS.values():
            assert same_bits(target(node), spec)


def test_a_constant_boundary_of_another_component_count_is_a_value_error() -> None:
    a = np.arange(4.0)
    with pytest.raises(ValueError, match="2 component"):
        ol.stencil(lambda g: g(-1), a, ol.constant((1.0, 2.0)))
    pair = ol.zip_with(lambda u, v: (u, v), a, np.arange(4))
    with pytest.raises(ValueError, match="1 component"):
        ol.stencil(lambda g: g(-1), pair, ol.constant(1.0))
    got = ol.compute_s(ol.stencil(lambda g: g(-1), pair, ol.constant((1.0, 2))))
    assert [v.tolist() for v in got] == [[1.0, 0.0, 1.0, 2.0], [2, 0, 1, 2]]
