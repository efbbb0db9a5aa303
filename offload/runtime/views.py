"""What a kernel launch needs of an array: a device pointer, extents, strides in elements.

``DeviceView`` is the one shape every input and output takes before a launch, whatever it
came from (managed NumPy array, frozen host array, CuPy/PyTorch/numba device array).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from offload.diagnostics import OffloadError


class DeviceView:
    """A strided array in device-accessible memory (a plain slotted class: one is built
    per captured array per call, so construction must be cheap)."""

    __slots__ = ("dtype", "keep", "ptr", "shape", "strides")

    def __init__(
        self,
        ptr: int,
        shape: tuple[int, ...],
        strides: tuple[int, ...],
        dtype: np.dtype[Any],
        keep: object = None,
    ) -> None:
        self.ptr = ptr
        """Address of element ``[0, ..., 0]`` (device or managed memory)."""
        self.shape = shape
        self.strides = strides
        """Strides in *elements* (the kernel indexes typed pointers), may be negative."""
        self.dtype = dtype
        self.keep = keep
        """Whatever owns the memory; held for as long as the view is in use."""


ArrayArg = tuple[int, tuple[int, ...], tuple[int, ...], object]
"""A captured array as a kernel launch reads it: device pointer, extents, strides in
elements, and whatever keeps the memory alive until the launch (a tuple: one is built per
array per call, and a tuple is the cheapest object to build)."""

_ELEMENT_STRIDES: dict[tuple[tuple[int, ...], int], tuple[int, ...]] = {}
"""(byte strides, itemsize) -> element strides, for the shapes of arrays seen so far."""


def view_arg(view: DeviceView) -> ArrayArg:
    """A ``DeviceView`` as an ``ArrayArg``."""
    return (view.ptr, view.shape, view.strides, view.keep)


def strides_in_elements(byte_strides: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """``element_strides`` memoised (a dict hit is cheaper than dividing every call)."""
    key = (byte_strides, itemsize)
    out = _ELEMENT_STRIDES.get(key)
    if out is None:
        out = element_strides(byte_strides, itemsize, "device array")
        if len(_ELEMENT_STRIDES) >= 4096:  # bounded: many distinct shapes, rarely reused
            _ELEMENT_STRIDES.clear()
        _ELEMENT_STRIDES[key] = out
    return out


def cupy_arg(x: Any) -> ArrayArg:
    """A CuPy array as an ``ArrayArg`` (the warm device-mode path: read straight from the
    array, no ``__cuda_array_interface__`` dict)."""
    return (x.data.ptr, x.shape, strides_in_elements(x.strides, x.itemsize), x)


def element_strides(byte_strides: tuple[int, ...], itemsize: int, what: str) -> tuple[int, ...]:
    """Byte strides -> element strides; an unaligned stride cannot be indexed by a typed
    pointer and is an error (the caller copies instead where it can)."""
    out = []
    for s in byte_strides:
        if s % itemsize:
            raise OffloadError(f"{what}: stride {s} bytes is not a multiple of the item size")
        out.append(s // itemsize)
    return tuple(out)


def c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of ``shape``."""
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * max(shape[k + 1], 1)
    return tuple(strides)


def cuda_array_view(x: Any) -> DeviceView | None:
    """A view of anything exposing ``__cuda_array_interface__`` (CuPy, PyTorch, numba
    device arrays), or ``None`` if ``x`` does not."""
    if type(x).__module__.startswith("cupy") and hasattr(x, "data") and hasattr(x, "strides"):
        # CuPy arrays directly: building __cuda_array_interface__ costs microseconds.
        dt = x.dtype
        size = dt.itemsize
        strides = tuple([s // size for s in x.strides])
        if any(s * size != b for s, b in zip(strides, x.strides, strict=True)):
            element_strides(x.strides, size, "device array")  # raises
        return DeviceView(x.data.ptr, x.shape, strides, dt, x)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is None:
        return None
    dtype = np.dtype(cai["typestr"])
    shape = tuple(int(n) for n in cai["shape"])
    raw = cai.get("strides")
    strides = (
        c_strides(shape)
        if raw is None
        else element_strides(tuple(int(s) for s in raw), dtype.itemsize, "device array")
    )
    return DeviceView(int(cai["data"][0]), shape, strides, dtype, x)
