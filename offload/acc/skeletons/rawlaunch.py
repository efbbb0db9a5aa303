"""Launching a compiled skeleton kernel without numba-cuda's dispatcher.

numba-cuda's ``kernel[grid, block](*args)`` types every argument, looks up the overload,
wraps each CuPy array and builds the argument list on every call: about 100 us of host
time a launch on the H100's host, more than the kernel itself for most levels of a scan.
``RawLauncher`` does that work once per argument *kind* (an array's dtype, rank and layout;
a scalar's type): it lets the dispatcher compile and launch the first call, then takes the
overload's loaded function and argument types and packs later calls itself, in numba's
kernel ABI, for CuPy's ``cuLaunchKernel`` on the current stream -- as the element kernels
launch (``offload.ptx.launch``).

numba's ABI, one kernel parameter per value: an array is ``meminfo, parent, nitems,
itemsize, data, shape..., strides...`` (pointer-sized integers, strides in bytes); an
integer, float or bool scalar is its C value. A kernel with any other parameter type, or
an argument of any other kind, keeps numba's launch.
"""

from __future__ import annotations

import ctypes
import struct
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from offload.runtime.frozen import FrozenLaunch
from offload.runtime.gpu import bind_thread

SMALL_GRID = r".*Grid size \d+ will likely result in GPU under-utilization"
"""numba-cuda's low-occupancy warning (a NumbaPerformanceWarning) for grids under 128 blocks."""

_SCALAR_CODES = {
    "int8": "b7x",
    "int16": "h6x",
    "int32": "i4x",
    "int64": "q",
    "uint8": "B7x",
    "uint16": "H6x",
    "uint32": "I4x",
    "uint64": "Q",
    "float32": "f4x",
    "float64": "d",
    "bool": "?7x",
}
"""Struct codes of a scalar parameter, each in an 8-byte slot (the slot's address is what
the driver reads, so only the value's own bytes matter)."""

_INT_TYPES = tuple(np.dtype(c).type for c in "bhilqBHILQ")
_SCALAR_KEYS: dict[Any, tuple[str, Any]] = {
    t: ("s", t)
    for t in (int, float, bool, np.bool_, np.float16, np.float32, np.float64, *_INT_TYPES)
}
"""The key of each scalar type the launcher may pack (one dict lookup a value: a launch
packs a dozen)."""


def arg_key(value: Any, cupy_ndarray: type) -> tuple[Any, ...] | None:
    """What numba's typing of ``value`` depends on, or ``None`` (not a kind this launcher
    packs)."""
    t = type(value)
    key = _SCALAR_KEYS.get(t)
    if key is not None:
        return key
    if t is cupy_ndarray:
        return ("a", value.dtype.char, value.ndim, _layout(value))
    return None


def _layout(a: Any) -> str:
    """numba's layout letter of CuPy array ``a``, from CuPy's own contiguity attributes
    where it has them (``a.flags`` builds an object on each access)."""
    c = getattr(a, "_c_contiguous", None)
    if c is None:
        flags = a.flags
        return "C" if flags.c_contiguous else "F" if flags.f_contiguous else "A"
    if c:
        return "C"
    f = getattr(a, "_f_contiguous", None)
    return "F" if (a.flags.f_contiguous if f is None else f) else "A"


class Packed:
    """A kernel's loaded function and a packer of its parameters."""

    def __init__(self, fn_ptr: int, codes: Sequence[str]) -> None:
        self.fn_ptr = fn_ptr
        self.struct = struct.Struct("=" + "".join(codes))
        slots = len(codes)
        self.storage = (ctypes.c_char * max(8, 8 * slots))()
        base = ctypes.addressof(self.storage)
        self.pointers = (ctypes.c_void_p * max(1, slots))(*[base + 8 * k for k in range(slots)])
        self.address = ctypes.addressof(self.pointers)
        self.lock = threading.Lock()


def _codes(argument_types: Sequence[Any]) -> list[str] | None:
    """One struct code per kernel parameter for numba argument types, or ``None``."""
    from numba.core import types

    codes: list[str] = []
    for ty in argument_types:
        if isinstance(ty, types.Array):
            codes += ["q", "q", "q", "q", "Q"] + ["q"] * (2 * ty.ndim)
        elif isinstance(ty, types.Boolean):
            codes.append(_SCALAR_CODES["bool"])
        elif isinstance(ty, types.Integer | types.Float) and str(ty) in _SCALAR_CODES:
            codes.append(_SCALAR_CODES[str(ty)])
        else:
            return None
    return codes


def _flat(a: Any, cupy_ndarray: Any) -> list[Any]:
    if type(a) is cupy_ndarray:
        return [0, 0, a.size, a.itemsize, a.data.ptr, *a.shape, *a.strides]
    return [a]


class Template:
    """Launches of one kernel whose arguments are the same objects on every call but at
    ``variable`` positions (a skeleton's fixed tables, neutral elements and sizes around
    the arrays of each call): the fixed arguments' kinds and packed values are found
    once, so a launch keys and flattens only the variable ones -- a few µs of host time
    a launch on a warm collective. A call whose kinds were never learned, or that does
    not pack, takes ``RawLauncher.launch``."""

    def __init__(self, raw: RawLauncher, args: Sequence[Any], variable: Sequence[int]) -> None:
        self.raw = raw
        nd = raw.cp.ndarray
        self.args = list(args)
        self.variable = tuple(variable)
        self.keys: list[Any] = [arg_key(a, nd) for a in args]
        # The flat values as segments: fixed runs between variable positions.
        self.segments: list[list[Any]] = []
        run: list[Any] = []
        for k, a in enumerate(args):
            if k in self.variable:
                self.segments.append(run)
                run = []
            else:
                run += _flat(a, nd)
        self.segments.append(run)

    def _assemble(self, values: Sequence[Any]) -> tuple[list[Any], list[Any], list[int]]:
        """The arguments' keys with ``values`` at the variable positions, their flat
        values in numba's ABI (up to a value of no kind this launcher packs: its key is
        ``None``), and the byte offset of each variable array's data address there."""
        nd = self.raw.cp.ndarray
        keys = self.keys[:]
        flat = self.segments[0][:]
        data: list[int] = []
        for pos, v, seg in zip(self.variable, values, self.segments[1:], strict=True):
            key = arg_key(v, nd)
            keys[pos] = key
            if key is None:
                break
            data.append(8 * (len(flat) + 4))  # (meminfo, parent, nitems, itemsize, data)
            flat += _flat(v, nd)
            flat += seg
        return keys, flat, data

    def launch(self, grid: int, threads: int, *values: Any) -> None:
        """Run with ``values`` at the variable positions, in order."""
        raw = self.raw
        keys, flat, _ = self._assemble(values)
        packed = raw.by_key.get(tuple(keys)) if None not in keys else None
        if packed is not None and raw.packed_launch(packed, grid, threads, flat):
            return
        args = self.args[:]
        for pos, v in zip(self.variable, values, strict=True):
            args[pos] = v
        raw.launch(grid, threads, args)

    def freeze(self, grid: int, threads: int, *values: Any) -> FrozenLaunch | None:
        """This launch with ``values`` (CuPy arrays) as a ``FrozenLaunch`` whose later
        launches take new data addresses for them, in order (arrays of the same shapes and
        strides); ``None`` before a launch of these kinds was learned, or where a value is
        not an array or does not pack."""
        raw = self.raw
        if any(type(v) is not raw.cp.ndarray for v in values):
            return None
        keys, flat, patch = self._assemble(values)
        packed = raw.by_key.get(tuple(keys)) if None not in keys else None
        if packed is None:
            return None
        image = bytearray(packed.struct.size)
        try:
            packed.struct.pack_into(image, 0, *flat)
        except (struct.error, OverflowError):
            return None
        offsets = [8 * k for k in range(len(flat))]
        dims = (grid, 1, 1, threads, 1, 1)
        return FrozenLaunch(raw.cp, packed.fn_ptr, dims, bytes(image), offsets, patch)


class RawLauncher:
    """Launches of one numba-cuda kernel (``dispatcher``), packed by offload after the
    first launch of each argument kind."""

    def __init__(self, dispatcher: Any, cp: Any) -> None:
        self.dispatcher = dispatcher
        self.cp = cp
        self.launch_kernel = cp.cuda.driver.launchKernel
        self.by_key: dict[tuple[Any, ...], Packed | None] = {}

    def launch(self, grid: int, threads: int, args: Sequence[Any]) -> None:
        """Run the kernel over ``grid`` blocks of ``threads`` on CuPy's current stream."""
        ndarray = self.cp.ndarray
        keyed: list[Any] = []
        values: list[Any] = []
        for a in args:  # (each argument's kind and flat values in one pass)
            t = type(a)
            key = _SCALAR_KEYS.get(t)
            if key is not None:
                values.append(a)
                keyed.append(key)
            elif t is ndarray:
                keyed.append(("a", a.dtype.char, a.ndim, _layout(a)))
                values += [0, 0, a.size, a.itemsize, a.data.ptr, *a.shape, *a.strides]
            else:
                keyed.append(None)
        keys = tuple(keyed)
        packed = self.by_key.get(keys) if None not in keys else None
        if packed is not None and self.packed_launch(packed, grid, threads, values):
            return
        self._numba_launch(grid, threads, args)
        if None not in keys and keys not in self.by_key:
            self.by_key[keys] = self._learn(args)

    def packed_launch(self, packed: Packed, grid: int, threads: int, values: Sequence[Any]) -> bool:
        """Launch with ``values`` (flat, in numba's ABI) packed into ``packed``'s
        parameters; ``False`` where one is out of its parameter type's range (numba's
        launch converts or refuses it)."""
        bind_thread(self.cp)
        try:
            stream = self.cp.cuda.get_current_stream().ptr
            with packed.lock:
                packed.struct.pack_into(packed.storage, 0, *values)
                self.launch_kernel(
                    packed.fn_ptr, grid, 1, 1, threads, 1, 1, 0, stream, packed.address, 0
                )
        except (struct.error, OverflowError):
            return False
        return True

    def _numba_launch(self, grid: int, threads: int, args: Sequence[Any]) -> None:
        stream = self.cp.cuda.get_current_stream().ptr
        with warnings.catch_warnings():
            # a small grid is the right one for a short level of a tree or a tail
            warnings.filterwarnings("ignore", message=SMALL_GRID)
            if not stream:  # CuPy's null stream: numba's default
                self.dispatcher[grid, threads](*args)
                return
            from numba import cuda

            self.dispatcher[grid, threads, cuda.external_stream(stream)](*args)

    def _learn(self, args: Sequence[Any]) -> Packed | None:
        """The overload the dispatcher compiled for ``args``, packed; ``None`` where its
        parameters are not all kinds this launcher packs."""
        try:
            argtypes = tuple(self.dispatcher.typeof_pyval(a) for a in args)
            kernel = self.dispatcher.overloads[argtypes]
            codes = _codes(kernel.argument_types)
            if codes is None or getattr(kernel, "debug", False):
                return None
            cufunc = kernel._codelibrary.get_cufunc()
            handle = cufunc.handle  # a CUkernel: cuLaunchKernel takes it as a CUfunction
            return Packed(int(getattr(handle, "value", handle)), codes)
        except Exception:  # another numba-cuda's internals: keep its launch
            return None
