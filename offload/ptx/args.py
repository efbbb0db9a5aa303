"""The pre-built argument packer of a loaded kernel.

``cuLaunchKernel`` takes an array of pointers to the argument values. ``ArgBuffer`` builds
that array once per kernel over one ctypes slot per parameter, and a generated ``fill``
function (straight-line code, one assignment per parameter) writes a call's values into
the slots. A warm launch is then: fill, one driver call. The driver copies the values at
launch, so the buffer is reusable at once; a lock keeps concurrent launchers apart.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from offload.ptx.kernel_source import KernelSource, ParamKind
from offload.runtime.memory import output_pointer

Fill = Callable[[tuple[int, ...], Sequence[Any], Sequence[Any]], None]


def _ctype(kind: ParamKind, dtype: np.dtype[Any] | None) -> Any:
    if kind in (ParamKind.EXTENT, ParamKind.CAP_EXTENT, ParamKind.CAP_STRIDE):
        return ctypes.c_int64
    if kind in (ParamKind.OUT, ParamKind.PTR, ParamKind.ERR):
        return ctypes.c_uint64
    assert dtype is not None
    return np.ctypeslib.as_ctypes_type(dtype)


def _value_expr(kind: ParamKind, index: int, axis: int) -> str:
    if kind == ParamKind.EXTENT:
        return f"shape[{index}]"
    if kind == ParamKind.OUT:
        return f"out_ptr(outs[{index}])"
    if kind == ParamKind.PTR:
        return f"caps[{index}].ptr"
    if kind == ParamKind.CAP_EXTENT:
        return f"caps[{index}].shape[{axis}]"
    if kind == ParamKind.CAP_STRIDE:
        return f"caps[{index}].strides[{axis}]"
    if kind == ParamKind.SCALAR:
        return f"caps[{index}]"
    return "err_ptr"


class ArgBuffer:
    """Argument slots for one kernel and the generated function that fills them."""

    def __init__(self, ks: KernelSource, err_ptr: int = 0) -> None:
        self.slots = [_ctype(p.kind, p.dtype)() for p in ks.params]
        self.pointers = (ctypes.c_void_p * max(1, len(self.slots)))(
            *[ctypes.addressof(s) for s in self.slots]
        )
        self.address = ctypes.addressof(self.pointers)
        """What ``cuLaunchKernel`` takes as ``kernelParams``."""
        self.lock = threading.Lock()
        lines = ["def fill(shape, outs, caps):"]
        for k, p in enumerate(ks.params):
            lines.append(f"    s{k}.value = {_value_expr(p.kind, p.index, p.axis)}")
        lines.append("    return None")
        namespace: dict[str, Any] = {"out_ptr": output_pointer, "err_ptr": err_ptr}
        namespace.update({f"s{k}": s for k, s in enumerate(self.slots)})
        exec(compile("\n".join(lines) + "\n", f"<offload args {ks.name}>", "exec"), namespace)
        self.fill: Fill = namespace["fill"]
