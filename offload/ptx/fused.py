"""A warm call's capture packing, guard and launch in one generated function.

The warm lane (``offload.driver.run``) knows, from its memo, the exact type of every
captured value. Where each array is a CuPy array (device memory, the common case of a loop
of ``compute_g`` calls) or a NumPy array (unified memory: a managed result, or a host array
frozen with ``use``), ``fused_launcher`` generates one straight-line function per memo that
reads each array's pointer, extents and strides, checks the first kernel's guard
(``offload.ptx.guard``) on them, packs the kernel's parameters with one ``struct`` call and
launches: what ``GPUBackend.prepare_captures``, ``KernelChoice.launch``, ``ArgBuffer.fill``
and ``GPUKernel.launch`` do one after the other, without building their tuples and lists.
A NumPy capture is used in place where it is a whole contiguous managed result (prefetched
first where the host has touched it, as ``prepare_captures`` does) or through its cached
device copy where it is frozen; any other host array takes the general path, which copies.

Unified mode waits for every kernel, so the host's work per call is on the critical path of
a loop of calls (run 12: ~30 µs of a 160 µs 2d-convolution step); this is that path's share.

Anything else -- a launch outside that kernel's guard, a shape without a launch
configuration yet, a stride that is not a whole number of elements, a value ``struct``
refuses -- calls the general path with the same arguments, which handles (or reports) it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from offload.backend import Launcher
from offload.diagnostics import KernelFault
from offload.ir.core import Function
from offload.ir.types import ArrayType
from offload.ptx.args import value_expr
from offload.ptx.choice import KernelChoice, Variant, WalkGuard
from offload.ptx.guard import IndexGuard
from offload.ptx.kernel_source import ParamKind
from offload.ptx.launch import GPUKernel
from offload.runtime.memory import ManagedBuffer, output_pointer, prefetch


def fused_launcher(  # noqa: PLR0917  (the backend's state, passed once per memo)
    fn: Function,
    variant: Variant,
    values: Sequence[Any],
    cupy_ndarray: type,
    slow: Launcher,
    frozen_lookup: Any = None,
) -> Launcher | None:
    """The fused launch of ``variant`` (the first of a kernel choice) for ``values`` of
    these exact types, falling back to ``slow``; ``None`` where it does not apply (another
    array type, a bounds-checked kernel, a variant that is itself a choice of blockings).
    ``frozen_lookup(cp, x)``: the device copy of a frozen host array (``FrozenTable``);
    without it, NumPy captures are not fused."""
    first = variant.kernel
    guard = variant.guard
    walk = None
    if isinstance(first, KernelChoice) and isinstance(first.first.guard, WalkGuard):
        # A walking kernel before the plain one: its guard joins the checks.
        walk = first.first.guard
        first = first.first.kernel
    if not isinstance(first, GPUKernel) or first.source.bounds_check:
        return None
    if guard is not None and not isinstance(guard, IndexGuard):
        return None
    pack = first.args.pack
    if pack is None or len(values) != len(fn.captures):
        return None
    arrays = [k for k, c in enumerate(fn.captures) if isinstance(c.type, ArrayType)]
    host = [k for k in arrays if type(values[k]) is np.ndarray]
    if any(type(values[k]) is not cupy_ndarray for k in arrays if k not in host):
        return None
    if host and frozen_lookup is None:
        return None
    ks = first.source
    lines = [f"    {''.join(f'v{k}, ' for k in range(len(values)))}= values"] if values else []
    if host:
        lines.append("    stream = current_stream()")
    checks: list[str] = []
    pointers: dict[int, str] = {k: f"v{k}.data.ptr" for k in arrays}
    for k in host:
        # A whole contiguous managed result is used in place (its owner's pointer); a
        # frozen host array through its device copy; anything else: the general path.
        pointers[k] = f"p{k}"
        lines += [
            f"    own = getattr(v{k}.base, 'offload_owner', None)",
            f"    if (type(own) is Managed and v{k}.nbytes == own.nbytes and v{k}.ndim"
            f" and (v{k}.flags.c_contiguous or v{k}.flags.f_contiguous)):",
            "        prefetch(cp, own, stream.ptr)",
            f"        p{k} = own.ptr",
            f"        sh{k} = v{k}.shape",
            f"        st{k} = v{k}.strides",
            "    else:",
            f"        d = frozen_lookup(cp, v{k})",
            "        if d is None:",
            "            return slow(shape, outs, values)",
            f"        p{k} = d.data.ptr",
            f"        sh{k} = d.shape",
            f"        st{k} = d.strides",
        ]
    for k in arrays:
        t = fn.captures[k].type
        assert isinstance(t, ArrayType)
        size = t.elem.dtype.itemsize
        if k not in host:
            lines += [f"    sh{k} = v{k}.shape", f"    st{k} = v{k}.strides"]
        for a in range(t.ndim):
            lines.append(f"    e{k}_{a} = st{k}[{a}] // {size}")
            checks.append(f"st{k}[{a}] == e{k}_{a} * {size}")
    if walk is not None:
        checks += walk.terms(first.source.rank)
    if guard is not None:
        checks += guard.terms(
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
            ptr=lambda k: pointers[k],
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
        *([] if host else ["    stream = current_stream()"]),
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
        "dims_get": first.dims.get,
        "out_ptr": output_pointer,
        "current_stream": first.cp.cuda.get_current_stream,
        "lock": first.args.lock,
        "pack": pack,
        "storage": first.args.storage,
        "launch_kernel": first.launch_kernel,
        "fn_ptr": first.fn_ptr,
        "address": first.args.address,
        "struct": struct,
        "cp": first.cp,
        "Managed": ManagedBuffer,
        "prefetch": prefetch,
        "frozen_lookup": frozen_lookup,
        "fault": lambda exc: KernelFault(
            f"the GPU kernel of '{first.user_name}' failed: {type(exc).__name__}: {exc}"
        ),
    }
    source = "def launch(shape, outs, values):\n" + "\n".join(lines) + "\n"
    exec(compile(source, f"<offload fused launch {ks.name}>", "exec"), namespace)
    launcher: Launcher = namespace["launch"]
    return launcher
