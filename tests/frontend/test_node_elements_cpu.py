"""An element of a delayed node, read by its consumer, is an array element as if the node
were materialised: a Python number its function returns has the node's dtype there (int64,
float64, bool), not a weak Python number that a narrower partner would take in (NumPy 2:
``np.int64(1000) + np.int8(1)`` is int64)."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol

pytestmark = pytest.mark.cpu


def _thousand_times(i):
    return i * 1000


def _three(v):
    return 3


def _plus(a, b):
    return a + b


@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p])
def test_a_producers_python_number_has_the_nodes_dtype_in_its_consumer(compute):
    i8 = np.arange(4, dtype=np.int8)
    z = ol.zip_with(_plus, ol.generate((4,), _thousand_times), i8)
    assert z.dtype == np.int64
    got = compute(z)
    assert got.dtype == np.int64 and got.tolist() == [0, 1001, 2002, 3003]
    f32 = np.arange(4, dtype=np.float32)
    both = compute(ol.zip_with(_plus, ol.map(_three, i8), f32))
    want = np.full(4, 3, np.int64) + f32
    assert both.dtype == want.dtype == np.float64 and both.tolist() == want.tolist()
    folded = compute(ol.fold_all(_plus, np.int8(0), ol.map(_three, i8)))
    assert folded.dtype == np.int64 and folded[()] == 12


def _inc(v):
    return v + 1


def _second_down(i):
    return 2 - i


@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p])
def test_skeleton_collectives_build_over_producers_over_collectives(compute):
    # A scan, filter or permute types its source without computing it: a producer over
    # another collective is typed with that collective standing for its element.
    x = np.array([3, -1, 4], np.int32)
    over = ol.map(_inc, ol.scanl1(_plus, x))  # [4, 3, 7]
    assert compute(ol.scanl1(_plus, over)).tolist() == [4, 7, 14]
    assert compute(ol.filter(lambda v: v > 3, over)).tolist() == [4, 7]
    moved = ol.permute(_plus, np.zeros(3, np.int32), _second_down, over)
    assert compute(moved).tolist() == [7, 3, 4]
    assert ol.map(_inc, ol.scanl1(_plus, x)).dtype == np.int32


def _twice(v):
    return v * 2


def _second(p):
    return p[1]


def _pairwise(a, b):
    return (a[0] + b[0], a[1] + b[1])


@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p])
def test_a_tuple_source_with_a_delayed_component_reaches_the_skeleton_computed(compute):
    x = np.arange(-2, 3, dtype=np.int64)
    kept, flags = compute(ol.filter(_second, (ol.map(_twice, x), x > 0)))
    assert kept.tolist() == [2, 4] and flags.tolist() == [True, True]
    sums, xs = compute(ol.scanl1(_pairwise, (ol.map(_twice, x), x)))
    assert sums.tolist() == [-4, -6, -6, -4, 0] and xs.tolist() == [-2, -3, -3, -2, 0]
    zeros = (np.zeros(5, np.int64), np.zeros(5, np.int64))
    moved = compute(ol.permute(_pairwise, zeros, lambda i: 4 - i, (ol.map(_twice, x), x)))
    assert [m.tolist() for m in moved] == [[4, 2, 0, -2, -4], [2, 1, 0, -1, -2]]
