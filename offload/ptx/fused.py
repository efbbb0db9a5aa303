"""A warm call's capture packing, guard and launch in one generated function.

The warm lane (``offload.driver.run``) knows, from its memo, the exact type of every
captured value. Where each array is a CuPy array (device memory, the common case of a loop
of ``compute_g`` calls), ``fused_launcher`` generates one straight-line function per memo
that reads each array's pointer, extents and strides, checks the first kernel's guard
(``offload.ptx.guard``) on them, packs the kernel's parameters with one ``struct`` call and
launches: what ``GPUBackend.prepare_captures``, ``GuardedKernel.launch``, ``ArgBuffer.fill``
and ``GPUKernel.launch`` do one after the other, without building their tuples and lists.

Anything else -- a launch outside that kernel's guard, a shape without a launch
configuration yet, a stride that is not a whole number of elements, a value ``struct``
refuses -- calls the general path with the same arguments, which handles (or reports) it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from offload.diagnostics import KernelFault
from offload.ir.core import Function
from offload.ir.types import ArrayType
from offload.ptx.args import value_expr
from offload.ptx.guard import guard_terms
from offload.ptx.kernel_source import ParamKind
from offload.ptx.launch import GPUKernel
from offload.runtime.memory import output_pointer

Launcher = Callable[[tuple[int, ...], Sequence[Any], Sequence[Any]], None]
"""``(shape, outs, values)``: run the kernel over ``shape`` into ``outs`` with the captured
``values`` as the memo's reader returns them."""


def fused_launcher(
    fn: Function, first: Any, values: Sequence[Any], cupy_ndarray: type, slow: Launcher
) -> Launcher | None:
    """The fused launch of ``first`` (the kernel a guarded kernel tries first) for
    ``values`` of these exact types, falling back to ``slow``; ``None`` where it does not
    apply (another array type, a bounds-checked or register-blocked kernel)."""
    if not isinstance(first, GPUKernel) or first.source.bounds_check:
        return None
    pack = first._args.pack
    if pack is None or len(values) != len(fn.captures):
        return None
    arrays = [k for k, c in enumerate(fn.captures) if isinstance(c.type, ArrayType)]
    if any(type(values[k]) is not cupy_ndarray for k in arrays):
        return None
    ks = first.source
    lines = [f"    {''.join(f'v{k}, ' for k in range(len(values)))}= values"] if values else []
    checks: list[str] = []
    for k in arrays:
        t = fn.captures[k].type
        assert isinstance(t, ArrayType)
        size = t.elem.dtype.itemsize
        lines += [f"    sh{k} = v{k}.shape", f"    st{k} = v{k}.strides"]
        for a in range(t.ndim):
            lines.append(f"    e{k}_{a} = st{k}[{a}] // {size}")
            checks.append(f"st{k}[{a}] == e{k}_{a} * {size}")
    checks += guard_terms(
        fn,
        unit_last=ks.unit_last,
        extent=lambda k, a: f"sh{k}[{a}]",
        stride=lambda k, a: f"e{k}_{a}",
        scalar=lambda k: f"v{k}",
    )
    args = [
        value_expr(
            p.kind,
            p.index,
            p.axis,
            out=lambda j: f"o{j}",
            ptr=lambda k: f"v{k}.data.ptr",
            extent=lambda k, a: f"sh{k}[{a}]",
            stride=lambda k, a: f"e{k}_{a}",
            scalar=lambda k: f"v{k}",
        )
        for p in ks.params
    ]
    outs = sorted({p.index for p in ks.params if p.kind == ParamKind.OUT})
    lines += [
        f"    if not ({' and '.join(checks) or 'True'}):",
        "        return slow(shape, outs, values)",
        "    dims = dims_get(shape)",
        "    if dims is None:",
        "        return slow(shape, outs, values)",
        *(f"    o{j} = out_ptr(outs[{j}])" for j in outs),
        "    stream = current_stream()",
        "    try:",
        "        with lock:",
        f"            pack(storage, 0, {', '.join(args)})",
        "            launch_kernel(fn_ptr, *dims, 0, stream.ptr, address, 0)",
        *(["        stream.synchronize()"] if first.synchronize else []),
        "    except (struct.error, OverflowError):",
        "        return slow(shape, outs, values)  # the converting fill decides",
        "    except Exception as exc:",
        "        raise fault(exc) from exc",
        "    return None",
    ]
    namespace: dict[str, Any] = {
        "slow": slow,
        "dims_get": first._dims.get,
        "out_ptr": output_pointer,
        "current_stream": first.cp.cuda.get_current_stream,
        "lock": first._args.lock,
        "pack": pack,
        "storage": first._args.storage,
        "launch_kernel": first._launch_kernel,
        "fn_ptr": first._fn_ptr,
        "address": first._args.address,
        "struct": struct,
        "fault": lambda exc: KernelFault(
            f"the GPU kernel of '{first.user_name}' failed: {type(exc).__name__}: {exc}"
        ),
    }
    source = "def launch(shape, outs, values):\n" + "\n".join(lines) + "\n"
    exec(compile(source, f"<offload fused launch {ks.name}>", "exec"), namespace)
    launcher: Launcher = namespace["launch"]
    return launcher
