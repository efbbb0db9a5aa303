"""Whether an ``out=`` array overlaps an array the element function reads.

``compute_*(shape, f, out=a)`` means ``a[...] = [f(i) for i in ...]``: every ``f(i)`` sees
the arrays as they were before the call, as NumPy's ufuncs do with overlapping operands. A
kernel writing ``a`` while other elements still read it would instead see a mix of old and
new values (a different answer on each backend, or on each run). So the driver computes into
a fresh array and copies it into ``out`` when ``may_overlap`` says the two may share memory.

The test is on address bounds (as ``np.may_share_memory``): it may answer yes for
interleaved views that share no element (which then only costs a copy), never no for arrays
that share one. Arrays of different libraries (a NumPy array and a CuPy array) are taken to
be different allocations; a view of one library's memory through another's (CuPy's
``UnownedMemory`` over a managed NumPy array, say) is not detected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def device_span(x: Any) -> tuple[int, int] | None:
    """``[low, high)`` byte addresses of the elements of device array ``x`` (CuPy, or any
    ``__cuda_array_interface__`` object); ``None`` if ``x`` is empty or not such an array."""
    data = getattr(x, "data", None)
    ptr = getattr(data, "ptr", None)
    if type(ptr) is int and hasattr(x, "strides"):  # CuPy: no interface dict to build
        shape, strides, item = x.shape, x.strides, x.itemsize
    else:
        cai = getattr(x, "__cuda_array_interface__", None)
        if cai is None:
            return None
        item = np.dtype(cai["typestr"]).itemsize
        shape = tuple(cai["shape"])
        ptr = int(cai["data"][0])
        raw = cai.get("strides")
        if raw is None:
            strides, step = [], item
            for n in reversed(shape):
                strides.append(step)
                step *= n
            strides.reverse()
        else:
            strides = list(raw)
    if 0 in shape:
        return None
    low = high = ptr
    for n, s in zip(shape, strides, strict=True):
        if s < 0:
            low += (n - 1) * s
        else:
            high += (n - 1) * s
    return low, high + item


def _cupy_memory(x: Any) -> Any:
    """The CuPy allocation object under ``x`` (a view shares its base's), or ``None`` for
    other arrays and for ``UnownedMemory`` (which may wrap any address)."""
    mem = getattr(getattr(x, "data", None), "mem", None)
    return None if mem is None or type(mem).__name__ == "UnownedMemory" else mem


def _spans_meet(a: Any, b: Any) -> bool:
    sa, sb = device_span(a), device_span(b)
    return sa is not None and sb is not None and sa[0] < sb[1] and sb[0] < sa[1]


def _host_overlap(out: np.ndarray[Any, Any], value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return bool(np.may_share_memory(out, value))
    if hasattr(value, "__cuda_array_interface__"):
        return False
    try:  # another host array-like (``__array_interface__``): NumPy reads its bounds
        return bool(np.may_share_memory(out, value))
    except Exception:
        return True  # unknown: copying is always correct


def may_overlap(out: Any, value: Any) -> bool:
    """Whether ``out`` and captured array ``value`` may share memory (see the module)."""
    return overlapping((out,), (value,), (0,))


def overlapping(outs: Sequence[Any], values: Sequence[Any], arrays: Sequence[int]) -> bool:
    """Whether any of ``outs`` may share memory with ``values[k]`` for ``k`` in ``arrays``.

    The warm path with ``out=`` asks this on every call, so the common device case is
    cheap: two CuPy arrays over different allocations (their ``data.mem``) do not overlap
    without computing a span."""
    for out in outs:
        if isinstance(out, np.ndarray):
            if any(_host_overlap(out, values[k]) for k in arrays):
                return True
            continue
        mem = _cupy_memory(out)
        for k in arrays:
            value = values[k]
            if isinstance(value, np.ndarray):
                continue
            if mem is not None:
                other = _cupy_memory(value)
                if other is not None and other is not mem:
                    continue
            if _spans_meet(out, value):
                return True
    return False
