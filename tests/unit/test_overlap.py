"""``offload.runtime.overlap``: address bounds of device arrays and the overlap test the
driver uses to decide whether an ``out=`` must be staged."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload.runtime.overlap import device_span, may_overlap, overlapping

pytestmark = pytest.mark.unit


class FakeDevice:
    """An object exposing ``__cuda_array_interface__`` over a host buffer's addresses."""

    def __init__(self, a: np.ndarray[Any, Any], c_strides: bool = False) -> None:
        self.a = a
        self.__cuda_array_interface__ = {
            "shape": a.shape,
            "typestr": a.dtype.str,
            "data": (a.__array_interface__["data"][0], False),
            "strides": None if c_strides else a.strides,
            "version": 3,
        }


def test_span_of_a_contiguous_array_covers_its_bytes():
    a = np.zeros(10, np.float32)
    lo = a.ctypes.data
    assert device_span(FakeDevice(a, c_strides=True)) == (lo, lo + 40)


def test_span_of_a_negative_stride_view_starts_at_its_last_element():
    a = np.arange(10.0)
    lo = a.ctypes.data
    assert device_span(FakeDevice(a[::-3])) == (lo, lo + 80)  # elements 9, 6, 3, 0


def test_span_of_a_2d_view_and_of_an_empty_array():
    a = np.zeros((4, 6), np.int32)
    lo = a.ctypes.data
    assert device_span(FakeDevice(a[1:3, 2:5])) == (lo + 32, lo + 4 * (2 * 6 + 5))
    assert device_span(FakeDevice(a[:0])) is None
    assert device_span(object()) is None


def test_device_arrays_overlap_by_bounds():
    a = np.zeros(20)
    assert may_overlap(FakeDevice(a[:10]), FakeDevice(a[9:]))
    assert not may_overlap(FakeDevice(a[:10]), FakeDevice(a[10:]))
    assert may_overlap(FakeDevice(a[::2]), FakeDevice(a[1::2]))  # bounds only: a copy, no harm


def test_host_arrays_use_numpys_bounds_test_and_libraries_do_not_mix():
    a = np.zeros(20)
    assert may_overlap(a[5:], a[:6]) and not may_overlap(a[5:], a[:5])
    assert not may_overlap(a, FakeDevice(np.zeros(3)))
    assert not may_overlap(FakeDevice(a), a)
    assert may_overlap(a, memoryview(a)[2:4])  # another host array-like: NumPy's test


def test_overlapping_checks_only_the_array_positions():
    a = np.zeros(8)
    values = [a, 3.0, np.zeros(8)]
    assert overlapping([a], values, [0, 2])
    assert not overlapping([a], values, [2])
    assert not overlapping([np.zeros(8)], values, [0, 2])


class FakeCupy:
    """A CuPy-like array: ``data`` is a pointer object whose ``mem`` is the allocation."""

    def __init__(self, a: np.ndarray[Any, Any], mem: object) -> None:
        self.data = type("Ptr", (), {"ptr": a.ctypes.data, "mem": mem})()
        self.shape, self.strides, self.itemsize = a.shape, a.strides, a.itemsize


class UnownedMemory:
    """Named as CuPy's wrapper of foreign memory: its arrays are checked by span."""


def test_cupy_arrays_over_different_allocations_do_not_overlap_without_a_span():
    a = np.zeros(10)
    one, two = object(), object()
    assert not may_overlap(FakeCupy(a, one), FakeCupy(a, two))  # by allocation alone
    assert may_overlap(FakeCupy(a[2:], one), FakeCupy(a[:5], one))  # one allocation: spans
    assert not may_overlap(FakeCupy(a[5:], one), FakeCupy(a[:5], one))
    assert may_overlap(FakeCupy(a, UnownedMemory()), FakeCupy(a[3:], two))  # foreign: spans
