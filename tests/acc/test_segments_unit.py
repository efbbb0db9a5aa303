"""Segment layouts of a segmented scan (``skeletons.segments``): the host's (``np.repeat``)
and the device's (``searchsorted`` of the segment ends, as on CuPy, which repeats by no
array of counts) agree on every descriptor, empty segments included."""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.acc.skeletons.segments import segment_layout

pytestmark = pytest.mark.unit

DEVICE_LIKE = types.SimpleNamespace(
    asarray=np.asarray,
    cumsum=np.cumsum,
    arange=np.arange,
    searchsorted=np.searchsorted,
)
"""An array module that is not ``numpy`` itself: ``segment_layout`` takes the device's way."""


@settings(max_examples=200, deadline=None)
@given(lengths=st.lists(st.integers(0, 6), max_size=12), with_z=st.booleans())
def test_the_device_layout_equals_the_hosts(lengths: list[int], with_z: bool) -> None:
    seg = np.array(lengths, np.int64)
    n = int(seg.sum())
    host = segment_layout(seg, n, with_z, "scanl_seg", np)
    dev = segment_layout(seg, n, with_z, "scanl_seg", DEVICE_LIKE)
    assert host.length == dev.length
    np.testing.assert_array_equal(np.asarray(host.heads), np.asarray(dev.heads))
    if with_z:
        np.testing.assert_array_equal(np.asarray(host.dest), np.asarray(dev.dest))
        k = np.arange(len(seg))
        want = np.arange(n) + np.repeat(k, seg) + 1  # (Accelerate's: a z before each segment)
        np.testing.assert_array_equal(np.asarray(dev.dest), want)


@pytest.mark.parametrize("xp", [np, DEVICE_LIKE])
def test_bad_descriptors_are_refused_on_either_module(xp: object) -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        segment_layout(np.array([2, -1, 3]), 4, True, "scanl_seg", xp)
    with pytest.raises(ValueError, match="sum to 5"):
        segment_layout(np.array([2, 3]), 4, False, "scanl_seg", xp)
    with pytest.raises(TypeError, match="integers"):
        segment_layout(np.array([2.0, 2.0]), 4, False, "scanl_seg", xp)
