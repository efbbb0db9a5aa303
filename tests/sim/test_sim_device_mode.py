"""Under the simulator, device memory mode returns device arrays as the GPU does (CuPy
arrays there, ``SimDeviceArray`` here): no implicit conversion to NumPy, ``get()`` for a
host copy, accepted back as a capture and as ``out=``; unified mode returns NumPy (issue 18
item 3)."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from offload.ptx.simarray import SimDeviceArray

pytestmark = pytest.mark.sim

A = np.linspace(0.0, 1.0, 12, dtype=np.float32)


def scale(i):
    return A[i] * np.float32(3.0)


@pytest.fixture
def device_mode():
    saved = ol.config.memory
    ol.config.memory = "device"
    yield
    ol.config.memory = saved


def test_unified_mode_returns_numpy_arrays():
    assert type(ol.compute_g(12, scale)) is np.ndarray


def test_device_mode_returns_device_arrays_that_numpy_does_not_read_implicitly(device_mode):
    got = ol.compute_g(12, scale)
    assert type(got) is SimDeviceArray
    assert got.shape == (12,) and got.dtype == np.float32
    np.testing.assert_array_equal(got.get(), ol.compute_s(12, scale))
    with pytest.raises(TypeError, match=r"Implicit conversion.*\.get\(\)"):
        np.asarray(got)
    assert "__cuda_array_interface__" in dir(type(got))


def test_a_device_result_is_a_capture_and_an_out_of_the_next_call(device_mode):
    first = ol.compute_g(12, scale)

    def again(i):
        return first[i] + np.float32(1.0)

    out = ol.compute_g(12, scale)
    got = ol.compute_g(12, again, out=out)
    assert got is out
    np.testing.assert_array_equal(out.get(), A * np.float32(3.0) + np.float32(1.0))


def test_a_host_out_is_accepted_in_device_mode_as_on_the_gpu(device_mode):
    host = np.zeros(24, np.float32)[::2]  # strided: staged and copied, as on the GPU
    assert ol.compute_g(12, scale, out=host) is host
    np.testing.assert_array_equal(host, A * np.float32(3.0))
