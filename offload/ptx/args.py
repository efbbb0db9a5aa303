"""The pre-built argument packer of a loaded kernel.

``cuLaunchKernel`` takes an array of pointers to the argument values. ``ArgBuffer`` lays
every parameter out once per kernel in one byte buffer (C alignment), builds that pointer
array over it, and generates a ``fill`` function that writes a call's values with a single
``struct.pack_into`` (one C call instead of a ctypes attribute store per parameter). A warm
launch is then: fill, one driver call. The driver copies the values at launch, so the
buffer is reusable at once; a lock keeps concurrent launchers apart.

What ``fill`` takes (the contract with ``GPUBackend.prepare_captures``): an array capture
is an ``ArrayArg`` tuple (``offload.runtime.views``: pointer, shape, element strides,
owner); a scalar capture is the value itself; outputs are whatever ``output_pointer``
accepts.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from offload.ptx.kernel_source import KernelSource, ParamKind
from offload.runtime.memory import output_pointer

Fill = Callable[[tuple[int, ...], Sequence[Any], Sequence[Any]], None]

_INT64 = np.dtype(np.int64)

_STRUCT_CODES = {
    ctypes.c_int64: "q",
    ctypes.c_uint64: "Q",
    ctypes.c_double: "d",
    ctypes.c_float: "f",
    ctypes.c_int32: "i",
    ctypes.c_uint32: "I",
    ctypes.c_int16: "h",
    ctypes.c_uint16: "H",
    ctypes.c_int8: "b",
    ctypes.c_uint8: "B",
    ctypes.c_bool: "?",
}


def param_ctype(
    kind: ParamKind, dtype: np.dtype[Any] | None, index_dtype: np.dtype[Any] = _INT64
) -> Any:
    """The ctypes type of a kernel parameter's value (extents and strides:
    ``KernelSource.index_dtype``)."""
    if kind in (ParamKind.EXTENT, ParamKind.CAP_EXTENT, ParamKind.CAP_STRIDE):
        return np.ctypeslib.as_ctypes_type(index_dtype)
    if kind in (ParamKind.OUT, ParamKind.PTR, ParamKind.ERR):
        return ctypes.c_uint64
    assert dtype is not None
    return np.ctypeslib.as_ctypes_type(dtype)


def value_expr(
    kind: ParamKind,
    index: int,
    axis: int,
    *,
    out: Callable[[int], str] = lambda j: f"out_ptr(outs[{j}])",
    ptr: Callable[[int], str] = lambda k: f"c{k}[0]",
    extent: Callable[[int, int], str] = lambda k, a: f"c{k}[1][{a}]",
    stride: Callable[[int, int], str] = lambda k, a: f"c{k}[2][{a}]",
    scalar: Callable[[int], str] = lambda k: f"caps[{k}]",
) -> str:
    """The generated fill's Python expression for one kernel parameter: by default over
    ``prepare_captures``' ``ArrayArg`` tuples (``c{k}``) and values (``caps``);
    ``offload.ptx.fused`` names its own."""
    if kind == ParamKind.EXTENT:
        return f"shape[{index}]"
    if kind == ParamKind.OUT:
        return out(index)
    if kind == ParamKind.PTR:
        return ptr(index)
    if kind == ParamKind.CAP_EXTENT:
        return extent(index, axis)
    if kind == ParamKind.CAP_STRIDE:
        return stride(index, axis)
    if kind == ParamKind.SCALAR:
        return scalar(index)
    return "err_ptr"


class ArgBuffer:
    """Argument storage for one kernel and the generated function that fills it."""

    def __init__(self, ks: KernelSource, err_ptr: int = 0) -> None:
        ctypes_ = [param_ctype(p.kind, p.dtype, ks.index_dtype) for p in ks.params]
        offsets: list[int] = []
        end = 0
        for ct in ctypes_:
            align = ctypes.alignment(ct)
            end = -(-end // align) * align
            offsets.append(end)
            end += ctypes.sizeof(ct)
        self.offsets = offsets
        """Each parameter's byte offset in ``storage``."""
        self.pointer_slots = {
            (p.kind, p.index): off
            for p, off in zip(ks.params, offsets, strict=True)
            if p.kind in (ParamKind.OUT, ParamKind.PTR)
        }
        """(``OUT``, result) or (``PTR``, capture) -> the byte offset of its address."""
        self.storage = (ctypes.c_char * max(end, 8))()
        base = ctypes.addressof(self.storage)
        self.slots = [
            ct.from_buffer(self.storage, off) for ct, off in zip(ctypes_, offsets, strict=True)
        ]
        """One ctypes view per parameter (the slow, converting fill writes through them)."""
        self.pointers = (ctypes.c_void_p * max(1, len(ctypes_)))(*[base + o for o in offsets])
        self.address = ctypes.addressof(self.pointers)
        """What ``cuLaunchKernel`` takes as ``kernelParams``."""
        self.lock = threading.Lock()
        exprs = [value_expr(p.kind, p.index, p.axis) for p in ks.params]
        arrays = sorted({p.index for p in ks.params if p.kind == ParamKind.PTR})
        head = ["def fill(shape, outs, caps):"]
        head += [f"    c{k} = caps[{k}]" for k in arrays]
        namespace: dict[str, Any] = {"out_ptr": output_pointer, "err_ptr": err_ptr}
        codes = [_STRUCT_CODES.get(ct) for ct in ctypes_]
        if all(c is not None for c in codes):
            fmt, prev_end = "=", 0
            for off, ct, code in zip(offsets, ctypes_, codes, strict=True):
                fmt += "x" * (off - prev_end) + str(code)  # explicit C padding
                prev_end = off + ctypes.sizeof(ct)
            assert struct.calcsize(fmt) == end
            namespace["pack"] = struct.Struct(fmt).pack_into
            namespace["storage"] = self.storage
            fast = [*head, f"    pack(storage, 0, {', '.join(exprs)})", "    return None"]
        else:  # a parameter type struct cannot pack (e.g. complex): ctypes stores only
            fast = [*head, *(f"    s{k}.value = {e}" for k, e in enumerate(exprs))]
            fast.append("    return None")
        slow = ["def fill_slow(shape, outs, caps):", *head[1:]]
        slow += [f"    s{k}.value = {e}" for k, e in enumerate(exprs)]
        slow.append("    return None")
        namespace.update({f"s{k}": s for k, s in enumerate(self.slots)})
        source = "\n".join(fast) + "\n" + "\n".join(slow) + "\n"
        exec(compile(source, f"<offload args {ks.name}>", "exec"), namespace)
        self._fast: Fill = namespace["fill"]
        self._slow: Fill = namespace["fill_slow"]
        self.pack: Callable[..., None] | None = namespace.get("pack")
        """``struct.pack_into`` of all the values in parameter order (into ``storage`` at 0),
        or ``None`` where struct cannot pack a parameter type (``offload.ptx.fused``)."""

    def fill(self, shape: tuple[int, ...], outs: Sequence[Any], captures: Sequence[Any]) -> None:
        """Write one launch's values (``captures`` as ``prepare_captures`` returns them)."""
        try:
            self._fast(shape, outs, captures)
        except (struct.error, OverflowError):
            # A value struct refuses (an out-of-range int, a float too large for float32):
            # store through ctypes, which converts (and refuses) as the kernel's types do.
            self._slow(shape, outs, captures)
