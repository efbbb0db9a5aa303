"""The skeleton kernels' own launcher packs numba's kernel ABI: checked here against a
stand-in dispatcher and driver (no GPU): the values each parameter slot holds, the kinds
it refuses, and the fall-back to numba's launch for them."""

from __future__ import annotations

import ctypes
import struct
import threading
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from numba.core import types

from offload.acc.skeletons.rawlaunch import RawLauncher, Template, _codes, arg_key

pytestmark = pytest.mark.unit


class FakeArray:
    """What the launcher reads of a CuPy array."""

    def __init__(self, shape: tuple[int, ...], dtype: Any, ptr: int, c: bool = True) -> None:
        self.shape = shape
        self.dtype = np.dtype(dtype)
        self.ndim = len(shape)
        self.size = int(np.prod(shape))
        self.itemsize = self.dtype.itemsize
        self.strides = tuple(
            int(s) for s in np.empty(shape, self.dtype, order="C" if c else "F").strides
        )
        self.data = SimpleNamespace(ptr=ptr)
        self.flags = SimpleNamespace(c_contiguous=c, f_contiguous=not c or self.ndim <= 1)


class FakeDispatcher:
    """numba's dispatcher as the launcher uses it: typing, overloads, ``[grid, block]``."""

    def __init__(self) -> None:
        self.numba_launches: list[tuple[Any, ...]] = []
        kernel = SimpleNamespace(
            argument_types=(types.int64, types.Array(types.float32, 2, "C"), types.float32),
            debug=False,
            _codelibrary=SimpleNamespace(
                get_cufunc=lambda: SimpleNamespace(handle=SimpleNamespace(value=0xABC))
            ),
        )
        self.overloads = {("i", "a", "f"): kernel}

    def typeof_pyval(self, v: Any) -> str:
        return "a" if isinstance(v, FakeArray) else "f" if isinstance(v, np.float32) else "i"

    def __getitem__(self, config: Any) -> Any:
        return lambda *args: self.numba_launches.append((config, args))


def fake_cupy(launches: list[tuple[Any, ...]]) -> Any:
    def launch_kernel(fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):  # noqa: PLR0913, PLR0917
        pointers = (ctypes.c_void_p * 11).from_address(params)
        slots = [ctypes.string_at(pointers[k], 8) for k in range(11)]
        launches.append((fn, (gx, gy, gz), (bx, by, bz), slots))

    stream = SimpleNamespace(ptr=0)
    bound: list[int] = []
    runtime = SimpleNamespace(getDevice=lambda: 0, setDevice=bound.append)
    cuda = SimpleNamespace(
        driver=SimpleNamespace(launchKernel=launch_kernel),
        get_current_stream=lambda: stream,
        runtime=runtime,
    )
    return SimpleNamespace(ndarray=FakeArray, cuda=cuda, bound=bound)


def test_first_launch_goes_through_numba_and_later_ones_are_packed_in_numbas_abi():
    launches: list[tuple[Any, ...]] = []
    dispatcher = FakeDispatcher()
    raw = RawLauncher(dispatcher, fake_cupy(launches))
    x = FakeArray((3, 5), np.float32, ptr=0x1000)
    args = (np.int64(15), x, np.float32(2.5))
    raw.launch(4, 256, args)
    assert len(dispatcher.numba_launches) == 1 and not launches
    raw.launch(4, 256, args)
    assert len(dispatcher.numba_launches) == 1 and len(launches) == 1
    fn, grid, block, slots = launches[0]
    assert fn == 0xABC and grid == (4, 1, 1) and block == (256, 1, 1)
    ints = [struct.unpack("=q", s)[0] for s in slots[:10]]
    # items; meminfo, parent, nitems, itemsize, data, shape (2), strides in bytes (2)
    assert ints == [15, 0, 0, 15, 4, 0x1000, 3, 5, 20, 4]
    assert struct.unpack("=f", slots[10][:4])[0] == 2.5


def test_a_new_argument_kind_is_learnt_through_numba_again():
    launches: list[tuple[Any, ...]] = []
    dispatcher = FakeDispatcher()
    raw = RawLauncher(dispatcher, fake_cupy(launches))
    c = FakeArray((3, 5), np.float32, ptr=0x1000)
    f = FakeArray((3, 5), np.float32, ptr=0x2000, c=False)
    raw.launch(1, 32, (np.int64(1), c, np.float32(0)))
    raw.launch(1, 32, (np.int64(1), f, np.float32(0)))
    assert len(dispatcher.numba_launches) == 2 and not launches


def test_a_value_out_of_range_keeps_numbas_launch():
    launches: list[tuple[Any, ...]] = []
    dispatcher = FakeDispatcher()
    raw = RawLauncher(dispatcher, fake_cupy(launches))
    x = FakeArray((2, 2), np.float32, ptr=0x10)
    raw.launch(1, 32, (1, x, np.float32(0)))
    raw.launch(1, 32, (1 << 70, x, np.float32(0)))  # struct refuses: numba decides
    assert len(dispatcher.numba_launches) == 2 and not launches


def test_parameter_codes_follow_numbas_abi():
    codes = _codes([types.Array(types.float64, 3, "A"), types.boolean, types.int8, types.uint64])
    assert codes is not None
    assert codes[:11] == ["q", "q", "q", "q", "Q", "q", "q", "q", "q", "q", "q"]
    assert codes[11:] == ["?7x", "b7x", "Q"]
    assert all(struct.calcsize("=" + c) == 8 for c in codes)
    assert _codes([types.complex128]) is None
    assert _codes([types.UniTuple(types.int64, 2)]) is None


def test_argument_kinds():
    assert arg_key(FakeArray((4,), np.int32, 1), FakeArray) == ("a", "i", 1, "C")
    assert arg_key(FakeArray((4, 2), np.int32, 1, c=False), FakeArray) == ("a", "i", 2, "F")
    assert arg_key(np.float32(1), FakeArray) == ("s", np.float32)
    assert arg_key(True, FakeArray) == ("s", bool)
    assert arg_key(np.complex64(1), FakeArray) is None
    assert arg_key(np.zeros(3), FakeArray) is None  # a host array: numba's launch decides


def test_a_packed_launch_from_a_new_thread_binds_the_device_first():
    """A thread that has not used CUDA has no current context: the first packed launch in
    each thread binds the device (``runtime.gpu.bind_thread``), later ones do not."""
    launches: list[tuple[Any, ...]] = []
    cp = fake_cupy(launches)
    launcher = RawLauncher(FakeDispatcher(), cp)
    args = (np.int64(15), FakeArray((3, 5), np.float32, ptr=0x1000), np.float32(2.5))

    def twice() -> None:
        launcher.launch(1, 32, args)
        launcher.launch(1, 32, args)

    twice()  # learnt here (numba's launch, then a packed one: this thread bound once)
    launches.clear()
    bound_before = len(cp.bound)
    worker = threading.Thread(target=twice)
    worker.start()
    worker.join()
    assert len(launches) == 2  # a packed launch in the worker: no numba launch
    assert cp.bound[bound_before:] == [0]


def test_a_template_packs_the_same_slots_as_a_full_launch_with_its_variable_arguments():
    launches: list[tuple[Any, ...]] = []
    raw = RawLauncher(FakeDispatcher(), fake_cupy(launches))
    x = FakeArray((3, 5), np.float32, ptr=0x1000)
    raw.launch(2, 64, (np.int64(15), x, np.float32(2.5)))  # (numba's launch: learnt)
    template = Template(raw, (np.int64(15), x, np.float32(2.5)), [1])
    y = FakeArray((3, 5), np.float32, ptr=0x2000)
    raw.launch(2, 64, (np.int64(15), y, np.float32(2.5)))
    template.launch(2, 64, y)
    assert len(launches) == 2
    assert launches[0] == launches[1]  # (the same function, grid, block and slot bytes)
    ints = [struct.unpack("=q", s)[0] for s in launches[1][3][:10]]
    assert ints[5] == 0x2000  # the variable array's data pointer, not the template's


def test_a_frozen_template_launch_writes_only_the_new_data_pointers():
    """``Template.freeze`` (a replayed step's launch): the image of a full launch, later
    launches writing just the variable arrays' data addresses into their slots."""
    launches: list[tuple[Any, ...]] = []
    raw = RawLauncher(FakeDispatcher(), fake_cupy(launches))
    x = FakeArray((3, 5), np.float32, ptr=0x1000)
    args = (np.int64(15), x, np.float32(2.5))
    template = Template(raw, args, [1])
    assert template.freeze(2, 64, x) is None  # (no launch of these kinds learnt yet)
    raw.launch(2, 64, args)  # (numba's launch: learnt)
    assert template.freeze(2, 64, 3.0) is None  # a variable value must be an array
    frozen = template.freeze(2, 64, x)
    assert frozen is not None
    y = FakeArray((3, 5), np.float32, ptr=0x2000)
    raw.launch(2, 64, (np.int64(15), y, np.float32(2.5)))  # the reference: a packed launch
    frozen(0x2000)
    assert len(launches) == 2 and launches[0] == launches[1]
    frozen(0x3000)
    ints = [struct.unpack("=q", s)[0] for s in launches[2][3][:10]]
    assert ints == [15, 0, 0, 15, 4, 0x3000, 3, 5, 20, 4]
    assert struct.unpack("=f", launches[2][3][10][:4])[0] == 2.5
    with pytest.raises(ValueError):  # (one address a variable array, no more, no fewer)
        frozen(0x2000, 0x3000)


def test_a_template_given_another_kind_of_argument_takes_the_full_launch():
    launches: list[tuple[Any, ...]] = []
    dispatcher = FakeDispatcher()
    raw = RawLauncher(dispatcher, fake_cupy(launches))
    x = FakeArray((3, 5), np.float32, ptr=0x1000)
    raw.launch(1, 32, (np.int64(1), x, np.float32(0)))
    template = Template(raw, (np.int64(1), x, np.float32(0)), [1])
    f = FakeArray((3, 5), np.float32, ptr=0x2000, c=False)  # an F-ordered array: not learnt
    template.launch(1, 32, f)
    assert len(dispatcher.numba_launches) == 2 and not launches
    assert dispatcher.numba_launches[-1][1][1] is f
    template.launch(1, 32, "not an array")  # (no key at all: numba's launch decides)
    assert len(dispatcher.numba_launches) == 3


class CupyLikeArray:
    """A CuPy array's own contiguity attributes, and ``flags`` that must not be read."""

    def __init__(self, c: bool, f: bool) -> None:
        self.dtype, self.ndim = np.dtype(np.float32), 2
        self._c_contiguous, self._f_contiguous = c, f

    @property
    def flags(self) -> Any:
        raise AssertionError("flags read where _c_contiguous/_f_contiguous exist")


@pytest.mark.parametrize(
    ("c", "f", "want"), [(True, False, "C"), (False, True, "F"), (False, False, "A")]
)
def test_layout_reads_cupys_own_contiguity_attributes(c: bool, f: bool, want: str) -> None:
    key = arg_key(CupyLikeArray(c, f), CupyLikeArray)
    assert key == ("a", "f", 2, want)
