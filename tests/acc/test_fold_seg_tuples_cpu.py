"""Tuples as struct of arrays (a 2x2 matrix product carried as 4-tuples: associative, not
commutative, so every tree keeps runs of consecutive elements), segmented folds (empty and
single segments, validation) and the clear errors of the fold family."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import offload as ol
from tests.acc.fold_reference import interpret, reduce_row, same_bits, tree_fold, wide_for

pytestmark = pytest.mark.cpu


def matmul2(p, q):
    a, b, c, d = p
    e, f, g, h = q
    return (
        (a * e + b * g) % 7,
        (a * f + b * h) % 7,
        (c * e + d * g) % 7,
        (c * f + d * h) % 7,
    )


def add(a, b):
    return a + b


def add_pair(p, q):
    return (p[0] + q[0], p[1] * q[1])


IDENTITY = (1, 0, 0, 1)


@settings(max_examples=20)
@given(
    seed=st.integers(0, 2**31),
    n=st.sampled_from([0, 1, 3, 64, 65, 200, 20000]),
    mode=st.sampled_from(["deterministic", "cross_target"]),
)
def test_fold_all_of_matrix_products_keeps_the_order(seed, n, mode):
    rng = np.random.default_rng(seed)
    mats = tuple(rng.integers(0, 7, n).astype(np.int64) for _ in range(4))
    node = ol.fold_all(matmul2, IDENTITY, mats)
    saved = ol.config.determinism
    try:
        ol.config.determinism = mode
        got = ol.compute_p(node)
    finally:
        ol.config.determinism = saved
    items = list(zip(*(list(m) for m in mats), strict=True))
    want = reduce_row(matmul2, IDENTITY, items)  # sequential: any tree gives these integers
    assert isinstance(got, tuple) and len(got) == 4
    assert [int(g) for g in got] == [int(w) for w in want]
    assert all(g.dtype == np.int64 and g.shape == () for g in got)
    tree = tree_fold(matmul2, IDENTITY, items, 1, wide=wide_for("cpu-par", mode))
    assert [int(g) for g in got] == [int(w) for w in tree]


def test_fold_of_a_tuple_of_arrays_gives_a_tuple_of_arrays():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.arange(12, dtype=np.int16).reshape(3, 4) % 3 + 1
    s, p = ol.compute_s(ol.fold(add_pair, (0.0, 1), (x, y)))
    assert s.dtype == np.float32 and p.dtype == np.int16
    assert (s == x.sum(-1)).all() and (p == y.prod(-1)).all()
    assert same_bits(interpret(ol.fold(add_pair, (0.0, 1), (x, y))), (s, p))


@settings(max_examples=25)
@given(
    lengths=st.lists(st.integers(0, 6), max_size=8),
    rows=st.integers(0, 3),
    dtype=st.sampled_from(["int8", "int64", "float32", "float64"]),
    target=st.sampled_from(["s", "p"]),
)
def test_fold_seg_folds_each_segment_and_empty_segments_give_z(lengths, rows, dtype, target):
    n = sum(lengths)
    a = (np.arange(rows * n) % 11 - 5).astype(dtype).reshape(rows, n)
    seg = np.array(lengths, dtype=np.int32)
    node = ol.fold_seg(add, 0, a, seg)
    got = (ol.compute_s if target == "s" else ol.compute_p)(node)
    assert got.shape == (rows, len(lengths)) and got.dtype == np.dtype(dtype)
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(int)
    for r in range(rows):
        for s_ in range(len(lengths)):
            part = list(a[r, starts[s_] : starts[s_ + 1]])
            want = np.asarray(reduce_row(add, 0, part), dtype)
            assert got[r, s_] == want
    assert same_bits(interpret(node), got)


def test_fold_seg_validates_the_descriptor():
    a = np.ones(5)
    with pytest.raises(ValueError, match="sum to 4"):
        ol.fold_seg(add, 0.0, a, np.array([1, 3]))
    with pytest.raises(ValueError, match="non-negative"):
        ol.fold_seg(add, 0.0, a, np.array([6, -1]))
    with pytest.raises(TypeError, match="1-D integer"):
        ol.fold_seg(add, 0.0, a, np.array([5.0]))
    with pytest.raises(TypeError, match="1-D integer"):
        ol.fold_seg(add, 0.0, a, np.array([[5]]))
    one = ol.compute_s(ol.fold_seg(add, 0.0, a, np.array([5])))
    assert one.tolist() == [5.0]


def test_fold_errors_are_clear():
    with pytest.raises(ValueError, match="empty axis"):
        ol.fold1(add, np.zeros((3, 0)))
    with pytest.raises(ValueError, match="at least one axis"):
        ol.fold(add, 0, np.zeros(()))
    with pytest.raises(TypeError, match="callable"):
        ol.fold(3, 0, np.zeros(3))
    with pytest.raises(TypeError, match="number or a tuple"):
        ol.fold(add, "0", np.zeros(3))
    assert ol.compute_s(ol.fold(add, 2.5, np.zeros((2, 0)))).tolist() == [2.5, 2.5]
    assert ol.compute_s(ol.fold_all(add, 7, np.zeros((0, 3), np.int32))) == 7


def test_fold1_of_a_long_row_splits_without_a_neutral_element():
    x = np.arange(40000, dtype=np.int64) % 1000
    got = ol.compute_p(ol.map(lambda v: v + 1, ol.fold1(lambda a, b: max(a, b), x.reshape(1, -1))))
    assert got.tolist() == [1000]


@settings(max_examples=15)
@given(
    lengths=st.lists(st.integers(0, 300), min_size=1, max_size=6),
    seed=st.integers(0, 2**31),
)
def test_fold_seg_lanes_follow_the_size_rule_bit_for_bit(lengths, seed):
    from offload.acc.commute import commutes
    from offload.acc.plan import seg_lanes

    n = sum(lengths)
    a = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    node = ol.fold_seg(add, 0.0, a, np.array(lengths))
    saved = ol.config.determinism
    try:
        ol.config.determinism = "cross_target"
        got = ol.compute_p(node)
        spec = interpret(node, "cross_target")
    finally:
        ol.config.determinism = saved
    lanes = seg_lanes(len(lengths), n, wide=True, commutes=commutes(add))
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(int)
    want = []
    for s_ in range(len(lengths)):
        seg = list(a[starts[s_] : starts[s_ + 1]])
        want.append(
            reduce_row(add, 0.0, [reduce_row(add, 0.0, seg[t::lanes]) for t in range(lanes)])
        )
    assert same_bits(got, np.array(want, np.float32)) and same_bits(got, spec)
