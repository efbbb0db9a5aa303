"""The fold family on the CPU targets against Python folds (in the order of the tree the
sizes fix) and the IR interpreter: shapes (empty, size 1, non powers of two, long and
short innermost axes), dtypes (bool, int8..float64), tuples, non-commutative combines."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import offload as ol
from tests.acc.fold_reference import (
    as_result,
    fold_reference,
    interpret,
    reduce_row,
    same_bits,
    tree_fold,
    wide_for,
)

pytestmark = pytest.mark.cpu

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float32", "float64"]


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def max_first_nan(a, b):
    return b if a == a and (b > a or b != b) else a  # max; the first NaN met wins


def matmul2(p, q):
    """2x2 integer matrix product mod 7 as 4-tuples: associative, not commutative."""
    a, b, c, d = p
    e, f, g, h = q
    return (
        (a * e + b * g) % 7,
        (a * f + b * h) % 7,
        (c * e + d * g) % 7,
        (c * f + d * h) % 7,
    )


COMBINES = [(add, 0), (mul, 1), (max_first_nan, None)]
TARGETS = {"cpu-seq": ol.compute_s, "cpu-par": ol.compute_p}


def _array(data, dtype, shape):
    n = math.prod(shape)
    if dtype == "bool":
        return np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool).reshape(
            shape
        )
    dt = np.dtype(dtype)
    if dt.kind == "f":
        vals = st.floats(-8, 8, width=dt.itemsize * 8) | st.sampled_from([np.nan, 0.5, -0.0])
    else:
        info = np.iinfo(dt)
        vals = st.integers(max(info.min, -100), min(info.max, 100))
    return np.array(data.draw(st.lists(vals, min_size=n, max_size=n)), dtype=dt).reshape(shape)


def _expected(f, z, a, shape_out, wide):
    values = fold_reference(f, z, a, wide=wide)
    one = np.zeros((), a.dtype)[()]
    dtype = np.asarray(reduce_row(f, z, [one, one])).dtype
    return as_result(values, shape_out, [dtype])


@settings(max_examples=30)
@given(
    data=st.data(),
    outer=st.lists(st.integers(0, 3), max_size=2),
    inner=st.sampled_from([0, 1, 2, 7, 33, 64, 65, 130, 257]),
    dtype=st.sampled_from(DTYPES),
    combine=st.sampled_from(COMBINES),
    mode=st.sampled_from(["deterministic", "cross_target"]),
    target=st.sampled_from(sorted(TARGETS)),
)
def test_fold_equals_python_fold_in_tree_order(data, outer, inner, dtype, combine, mode, target):
    f, z = combine
    shape = (*outer, inner)
    a = _array(data, dtype, shape)
    if z is None and inner == 0:
        with pytest.raises(ValueError, match="empty axis"):
            ol.fold1(f, a)
        return
    node = ol.fold(f, z, a) if z is not None else ol.fold1(f, a)
    saved = ol.config.determinism
    try:
        ol.config.determinism = mode
        got = TARGETS[target](node)
    finally:
        ol.config.determinism = saved
    want = _expected(f, z, a, tuple(outer), wide_for(target, mode))
    assert same_bits(got, want), (got, want)


@settings(max_examples=25)
@given(
    data=st.data(),
    n=st.sampled_from([0, 1, 5, 64, 65, 200, 1000]),
    dtype=st.sampled_from(["int8", "int32", "float32", "float64"]),
    mode=st.sampled_from(["deterministic", "cross_target"]),
)
def test_fold_all_of_zip_with_equals_the_interpreter_and_python(data, n, dtype, mode):
    x = _array(data, dtype, (n,))
    y = _array(data, dtype, (n,))
    node = ol.fold_all(add, 0, ol.zip_with(mul, x, y))
    saved = ol.config.determinism
    try:
        ol.config.determinism = mode
        got = ol.compute_s(node)
    finally:
        ol.config.determinism = saved
    spec = interpret(node, mode)
    assert same_bits(got, spec)
    with np.errstate(all="ignore"):
        prods = list(x * y)
    want = tree_fold(add, 0, prods, 1, wide=wide_for("cpu-seq", mode))
    assert same_bits(got, np.asarray(want, dtype)), (got, want)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_cpu_tree_with_lanes_equals_python_in_tree_order(dtype):
    from offload.acc.plan import CPU_CHUNK, CPU_LANES

    rng = np.random.default_rng(7)
    n = 2 * CPU_CHUNK + 13  # 2 partials (the last shorter), lanes each, remainders
    a = (rng.standard_normal((1, n)) * 50).astype(dtype)
    node = ol.fold(add, 0, a)
    want = _expected(add, 0, a, (1,), wide=False)
    got_s, got_p = ol.compute_s(node), ol.compute_p(node)
    assert same_bits(got_s, want) and same_bits(got_p, want)
    assert CPU_LANES > 1
    if dtype == "float32":
        sequential = np.asarray([reduce_row(add, 0, list(r)) for r in a], dtype)
        assert not same_bits(got_s, sequential)  # the tree is not the sequential order


def test_the_interpreter_runs_the_cpu_tree_with_lanes():
    from offload.acc.plan import CPU_CHUNK

    a = np.random.default_rng(8).standard_normal(2 * CPU_CHUNK + 3).astype(np.float32)
    node = ol.fold_all(add, 0.0, a)
    assert same_bits(interpret(node), ol.compute_s(node))
