"""compute_g under the CUDA simulator: an ``out=`` overlapping a captured array gets
CPython's values (the kernel writes a fresh array, copied into ``out`` after), on cold and
warm calls; a non-overlapping ``out=`` is written in place."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import offload as ol

pytestmark = pytest.mark.sim

src = np.zeros(1)


def neighbours(i: int) -> Any:
    n = src.shape[0]
    return src[(i + 1) % n] * 10.0 + src[(i + n - 1) % n]


@pytest.fixture
def restore_src():
    global src
    saved = src
    yield
    src = saved


@pytest.mark.parametrize("view", [slice(None), slice(None, None, -1), slice(3, 23)])
def test_overlapping_out_sees_the_arrays_as_before_the_call(view, restore_src):
    global src
    for _ in range(2):
        base = np.arange(24.0) - 5
        src = base[2:22]
        want = np.array([neighbours(i) for i in range(20)])
        out = base[view][:20]
        assert ol.compute_g(20, neighbours, out=out) is out
        np.testing.assert_array_equal(out, want)


def test_disjoint_out_is_written_in_place(restore_src):
    global src
    src = np.arange(10.0)
    out = np.zeros(10)
    assert ol.compute_g(10, neighbours, out=out) is out
    np.testing.assert_array_equal(out, [neighbours(i) for i in range(10)])
