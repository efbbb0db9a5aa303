"""Captures and out= take any host array by its interface, without a copy (issue 18 item 7):
``__array_interface__`` objects and DLPack objects such as torch/JAX CPU tensors (here: small
stand-ins built on NumPy, whose dtype, like torch's, is not a NumPy dtype); results hand over
through DLPack without a copy."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from offload.cpu.backend import CPU_SEQ

pytestmark = pytest.mark.cpu

COMPUTE = {"s": ol.compute_s, "p": ol.compute_p}


class ArrayInterface:
    """Only ``__array_interface__`` (and the attributes every array has)."""

    def __init__(self, a: np.ndarray) -> None:
        self._a = a
        self.__array_interface__ = a.__array_interface__
        self.shape, self.dtype, self.ndim = a.shape, a.dtype, a.ndim


class LibraryDtype:
    """A dtype NumPy does not know (as torch.float32 is)."""

    def __init__(self, name: str) -> None:
        self.name = name


class DLPackTensor:
    """Only DLPack, with ``shape``/``ndim`` and a dtype of its own, as a torch CPU tensor."""

    def __init__(self, a: np.ndarray) -> None:
        self._a = a
        self.shape, self.ndim, self.dtype = a.shape, a.ndim, LibraryDtype(str(a.dtype))

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class DeviceOnly:
    """An array in GPU memory (only ``__cuda_array_interface__``)."""

    shape, ndim, dtype = (4,), 1, np.dtype(np.float64)
    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f8", "data": (0, False), "version": 3}


@pytest.mark.parametrize("wrap", [ArrayInterface, DLPackTensor])
@pytest.mark.parametrize("target", sorted(COMPUTE))
def test_a_host_array_by_its_interface_is_a_capture(target, wrap):
    base = np.arange(12.0).reshape(3, 4)
    x = wrap(base)

    def f(i, j):
        return x[i, j] * 2.0 + x.shape[1]

    np.testing.assert_array_equal(COMPUTE[target]((3, 4), f), base * 2 + 4)
    base[1, 1] = 100.0  # the same memory, read again on the next call: not a copy
    assert COMPUTE[target]((3, 4), f)[1, 1] == 204.0
    (view,) = CPU_SEQ.prepare_captures([x])
    assert type(view) is np.ndarray and np.shares_memory(view, base)


@pytest.mark.parametrize("wrap", [ArrayInterface, DLPackTensor])
@pytest.mark.parametrize("target", sorted(COMPUTE))
def test_a_host_array_by_its_interface_is_an_out_written_in_place(target, wrap):
    a = np.linspace(0.0, 1.0, 10, dtype=np.float32)
    memory = np.zeros((2, 10), np.float32)
    out = wrap(memory[1])
    got = COMPUTE[target](10, lambda i: a[i] + np.float32(1.0), out=out)
    assert got is out
    np.testing.assert_array_equal(memory[1], a + 1)
    assert not memory[0].any()


def test_out_of_a_library_dtype_follows_same_kind():
    a = np.linspace(0.0, 1.0, 4)
    with pytest.raises(TypeError, match="same_kind"):
        ol.compute_s(4, lambda i: a[i], out=DLPackTensor(np.zeros(4, np.int64)))


def test_an_array_in_gpu_memory_given_to_a_cpu_target_is_a_type_error():
    x = DeviceOnly()

    def f(i):
        return x[i]

    with pytest.raises(TypeError, match="GPU memory"):
        ol.compute_s(4, f)


@pytest.mark.parametrize("target", sorted(COMPUTE))
def test_results_hand_over_through_dlpack_without_a_copy(target):
    a = np.arange(6.0)
    got = COMPUTE[target](6, lambda i: a[i] * 3.0)
    taken = np.from_dlpack(got)  # what torch.from_dlpack / jax.dlpack.from_dlpack call
    assert np.shares_memory(taken, got)
    np.testing.assert_array_equal(taken, a * 3)
    wrapped = DLPackTensor(got)
    assert np.shares_memory(np.from_dlpack(wrapped), got)
