"""``out=`` overlapping an array the element function reads: every backend gives what
CPython gives for ``out[...] = [f(i) for i in range(n)]`` (each ``f(i)`` sees the arrays as
before the call), on cold and warm calls -- never a mix of old and new values."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import offload as ol

pytestmark = pytest.mark.cpu

COMPUTES = [ol.compute_s, ol.compute_p]

src = np.zeros(1)


def shifted(i: int) -> Any:
    return src[i - 1] + 1.0 if i > 0 else -1.0


def neighbours(i: int) -> Any:
    n = src.shape[0]
    return src[(i + 1) % n] * 10.0 + src[(i + n - 1) % n]


def cpython(f: Any, n: int) -> np.ndarray[Any, Any]:
    return np.array([f(i) for i in range(n)])


@pytest.fixture
def restore_src():
    global src
    saved = src
    yield
    src = saved


@pytest.mark.parametrize("compute", COMPUTES)
def test_out_that_is_the_captured_array_sees_the_old_values(compute, restore_src):
    global src
    for _ in range(3):  # cold, then warm-lane calls
        src = np.arange(16.0)
        want = cpython(shifted, 16)
        got = compute(16, shifted, out=src)
        assert got is src
        np.testing.assert_array_equal(src, want)


@pytest.mark.parametrize("compute", COMPUTES)
def test_out_that_is_a_reversed_view_of_the_captured_array(compute, restore_src):
    global src
    for _ in range(2):
        base = np.arange(12.0)
        src = base
        want = cpython(neighbours, 12)
        compute(12, neighbours, out=base[::-1])
        np.testing.assert_array_equal(base[::-1], want)


@pytest.mark.parametrize("compute", COMPUTES)
def test_out_that_does_not_overlap_is_written_in_place(compute, restore_src):
    global src
    src = np.arange(8.0)
    out = np.full(8, np.nan)
    got = compute(8, shifted, out=out)
    assert got is out
    np.testing.assert_array_equal(out, cpython(shifted, 8))
    np.testing.assert_array_equal(src, np.arange(8.0))


@st.composite
def overlapping_views(draw: Any) -> tuple[np.ndarray[Any, Any], slice, slice]:
    size = draw(st.integers(2, 40))
    base = np.arange(size, dtype=np.float64) * 1.5 - 3
    n = draw(st.integers(1, size))

    def view() -> slice:
        step = draw(st.sampled_from([1, 1, 2, -1, -2]))
        span = (n - 1) * abs(step) + 1
        if span > size:
            step = 1 if step > 0 else -1
            span = n
        start = draw(st.integers(0, size - span))
        if step > 0:
            return slice(start, start + span, step)
        stop = start - 1 if start > 0 else None
        return slice(start + span - 1, stop, step)

    return base, view(), view()


@settings(max_examples=60, deadline=None)
@given(case=overlapping_views(), which=st.sampled_from(COMPUTES))
def test_any_views_of_one_array_give_cpythons_values(case, which):
    global src
    base, read, write = case
    saved = src
    try:
        src = base[read]
        want = cpython(neighbours, src.shape[0])
        which(src.shape[0], neighbours, out=base[write])
        np.testing.assert_array_equal(base[write], want)
    finally:
        src = saved
