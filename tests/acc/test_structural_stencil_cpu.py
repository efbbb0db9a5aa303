"""Structural nodes (extend/replicate, slice with ALL, reverse, transpose, generate) and
stencils (every boundary, ranks 1-3, tuples) against NumPy and the interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import offload as ol
from tests.acc.fold_reference import interpret, same_bits

pytestmark = pytest.mark.cpu

ALL = ol.ALL


@settings(max_examples=25)
@given(
    shape=st.lists(st.integers(0, 4), min_size=1, max_size=3),
    dtype=st.sampled_from(["bool", "int8", "uint16", "float32"]),
    which=st.sampled_from(["reverse", "transpose", "slice", "extend"]),
)
def test_structural_nodes_equal_numpy(shape, dtype, which):
    a = (np.arange(int(np.prod(shape))) % 5).astype(dtype).reshape(shape)
    if which == "reverse":
        node, want = ol.reverse(a), a[..., ::-1]
    elif which == "transpose":
        node, want = ol.transpose(a), a.T
    elif which == "slice":
        if shape[0] == 0:
            with pytest.raises(IndexError):
                ol.slice(a, (0, *[ALL] * (len(shape) - 1)))
            return
        node, want = ol.slice(a, (-1, *[ALL] * (len(shape) - 1))), a[-1]
        if len(shape) == 1:
            node = ol.map(lambda v: v, ol.extend((1,), node))
            want = a[-1:]
    else:
        node = ol.extend((ALL, 3, *[ALL] * (len(shape) - 1)), a)
        want = np.broadcast_to(a[:, None], (shape[0], 3, *shape[1:]))
    got = ol.compute_s(node)
    assert same_bits(got, np.ascontiguousarray(want))
    assert same_bits(interpret(node), got)


def test_replicate_generate_and_nesting():
    v = np.arange(4, dtype=np.int32)
    rows = ol.replicate((3, ALL), v)
    assert (ol.compute_p(rows) == np.tile(v, (3, 1))).all()
    cols = ol.transpose(ol.replicate((3, ALL), v))
    assert (ol.compute_s(cols) == np.tile(v, (3, 1)).T).all()
    g = ol.generate((2, 3), lambda i, j: i * 10 + j)
    assert ol.compute_s(ol.reverse(g)).tolist() == [[2, 1, 0], [12, 11, 10]]
    m = np.arange(12).reshape(3, 4)
    assert ol.compute_s(ol.slice(m, (ALL, 2))).tolist() == [2, 6, 10]


def test_structural_specs_are_checked():
    a = np.zeros((2, 3))
    with pytest.raises(ValueError, match="keeps 1 axes"):
        ol.extend((ALL, 3), a.reshape(-1)[:0].reshape(0, 0))
    with pytest.raises(ValueError, match="3 entries for an array of 2 axes"):
        ol.slice(a, (ALL, ALL, ALL))
    with pytest.raises(TypeError, match="ALL or ints"):
        ol.slice(a, (ALL, "x"))
    with pytest.raises(ValueError, match="at least one axis"):
        ol.reverse(np.zeros(()))


def _pad_mode(boundary):
    return {"clamp": "edge", "mirror": "reflect", "wrap": "wrap"}[boundary]


def blur1(get):
    return get(-1) + 2 * get(0) + get(1)


def lap2(get):
    return get(-1, 0) + get(1, 0) + get(0, -1) + get(0, 1) - 4 * get(0, 0)


def diff3(get):
    return get(1, 0, -1) - get(-1, 0, 1)


@settings(max_examples=30)
@given(
    rank=st.integers(1, 3),
    dims=st.lists(st.integers(1, 6), min_size=3, max_size=3),
    boundary=st.sampled_from(["clamp", "mirror", "wrap", "constant"]),
    dtype=st.sampled_from(["int16", "float32", "float64"]),
)
def test_stencil_equals_numpy_pad(rank, dims, boundary, dtype):
    shape = tuple(dims[:rank])
    if boundary == "mirror":
        shape = tuple(max(n, 2) for n in shape)
    a = (np.arange(int(np.prod(shape))) * 7 % 13).astype(dtype).reshape(shape)
    fn = {1: blur1, 2: lap2, 3: diff3}[rank]
    b = ol.constant(5) if boundary == "constant" else boundary
    got = ol.compute_p(ol.stencil(fn, a, b))
    if boundary == "constant":
        p = np.pad(a, 1, mode="constant", constant_values=5)
    else:
        p = np.pad(a, 1, mode=_pad_mode(boundary))

    def get_at(*d):
        sl = tuple(slice(1 + k, 1 + k + n) for k, n in zip(d, shape, strict=True))
        return p[sl]

    want = fn(get_at)
    assert got.dtype == want.dtype and (got == want).all()
    assert same_bits(interpret(ol.stencil(fn, a, b)), got)


def test_stencil_of_one_element_and_of_tuples():
    one = np.array([3.0])
    assert ol.compute_s(ol.stencil(blur1, one, "mirror")).tolist() == [12.0]

    def pair(get):
        left, r = get(-1), get(1)
        return (left[0] + r[0], left[1] * r[1])

    x, y = np.arange(4.0), np.arange(1, 5)
    s, p = ol.compute_s(ol.stencil(pair, (x, y), ol.constant((0.0, 1))))
    assert s.tolist() == [1.0, 2.0, 4.0, 2.0] and p.tolist() == [2, 3, 8, 3]


def test_stencil_extent_and_errors():
    assert ol.stencil(lap2, np.zeros((3, 3))).extent == ((-1, 1), (-1, 1))

    def wide(get):
        return get(1 + 1, 0) + get(-2 * 1, -(3 - 1)) + get(0, 2 * 2 - 1)

    assert ol.stencil(wide, np.zeros((3, 3))).extent == ((-2, 2), (-2, 3))
    with pytest.raises(ValueError, match="rank 1 to 3"):
        ol.stencil(blur1, np.zeros((2, 2, 2, 2)))
    with pytest.raises(ValueError, match="boundary"):
        ol.stencil(blur1, np.zeros(3), "reflect")
    k = np.array([1])

    def moving(get):
        return get(k[0])

    with pytest.raises(ol.OffloadError, match="compile-time integer constants"):
        ol.compute_s(ol.stencil(moving, np.zeros(3)))
