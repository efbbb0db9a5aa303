"""``GPUBackend``: the GPU target behind ``offload.backend.Backend`` (compute_g).

Modes: ``unified`` (default) -- results are NumPy arrays over CUDA managed memory and the
call waits for the kernel; ``device`` -- results are CuPy arrays from a size-class pool and
launches are asynchronous on the current CuPy stream. The kernels are the variants of
``offload.ptx.plan.GPU_PLAN`` (``offload.ptx.choice``). The simulator is a target of its
own (``offload.ptx.sim``) that shares the plan and the kernel source.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from offload.backend import Launcher, Pinned
from offload.diagnostics import KernelFault, OffloadError
from offload.ir.core import Function
from offload.ir.printer import print_function
from offload.options import CompileOptions
from offload.ptx.cache import DEFAULT_MAX_BYTES, CacheEntry, KernelCache, cache_key
from offload.ptx.choice import KernelChoice, build_choice
from offload.ptx.compile import compile_ptx, tool_versions
from offload.ptx.cubin import cubin_arch, link_cubin, note_once
from offload.ptx.fused import fused_launcher
from offload.ptx.inspect import describe
from offload.ptx.kernel_source import KernelSource, build_kernel_source
from offload.ptx.launch import GPUKernel
from offload.ptx.pinned import frozen_pinned
from offload.ptx.plan import GPU_PLAN, IndexVariant
from offload.runtime.gpu import device_info, load_cupy
from offload.runtime.memory import (
    ManagedPool,
    cupy_c_contiguous,
    frozen_table,
    input_view,
    managed_buffer,
    output_pointer,
    prefetch,
    whole_block,
)
from offload.runtime.pool import DevicePool
from offload.runtime.views import cupy_arg, strides_in_elements, view_arg

_NUMBERS = frozenset({bool, int, float, np.bool_, *(np.dtype(c).type for c in "bhilqBHILQefd")})
"""The scalar types a replayed launch passes through as they are."""

Mode = Literal["unified", "device"]


class GPUBackend:
    """Compiles optimised IR to PTX and a cubin (cached in memory and on disk) and runs it."""

    def __init__(
        self,
        mode: Mode | str = "unified",
        cache_dir: str | os.PathLike[str] | None = None,
        max_cache_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        if mode not in ("unified", "device"):
            raise OffloadError(f"unknown GPU memory mode {mode!r} (use 'unified' or 'device')")
        self.mode: Mode = "unified" if mode == "unified" else "device"
        self.name = "gpu"
        self.cache = KernelCache(cache_dir, max_cache_bytes)
        self._loaded: dict[str, GPUKernel] = {}
        """Cache key -> loaded kernel (the in-process level above the PTX cache)."""
        self._pool: DevicePool | None = None
        self._managed: ManagedPool | None = None
        self._cp: Any = None
        """The ``cupy`` module once the first GPU call has loaded it."""
        self._frozen = frozen_table()
        self._twin: GPUBackend | None = None
        self._pool_owner: GPUBackend | None = None
        self.cubins = True
        """Link and load cubins (``offload.ptx.cubin``); off once the driver refuses one:
        its other cubins come from the same nvJitLink, so the PTX is loaded from then on."""

    def device_twin(self) -> GPUBackend:
        """This backend in the ``device`` mode (itself if it is): the same disk cache and
        ``use`` table, its own loaded kernels (a device-mode launch does not synchronise)
        and pool. A unified-mode call computes the arrays only its own kernels read there
        (``Context.inner``): no managed memory, no synchronise until the result."""
        if self.mode == "device":
            return self
        twin = self._twin
        if twin is None:
            twin = GPUBackend("device")
            twin.cache = self.cache
            twin._frozen = self._frozen
            twin._cp = self._cp
            twin._pool_owner = self  # (one pool of device blocks: ``managed_pool``)
            self._twin = twin
        return twin

    # -- Backend protocol ----------------------------------------------------------------

    def compile(self, fn: Function, options: CompileOptions) -> KernelChoice:
        """The kernel variants of ``fn`` (optimised IR; ``offload.ptx.plan``): the first
        that applies is compiled now, each other one when a launch first needs it."""
        return build_choice(
            fn,
            options,
            GPU_PLAN,
            lambda ir, index: self._kernel(ir, options, index),
            min_tiles=lambda: device_info().sm_count,
        )

    def _kernel(self, fn: Function, options: CompileOptions, index: IndexVariant) -> GPUKernel:
        """The loaded kernel of one variant's IR (cached by key, in memory and on disk)."""
        ks = build_kernel_source(
            fn, bounds_check=options.bounds_check, index_bits=index.bits, unit_last=index.unit_last
        )
        cp = load_cupy()
        dev = device_info()
        key = self.key(fn, options, dev.cc, ks)
        kernel = self._loaded.get(key)
        if kernel is not None:
            return kernel
        entry = self.cache.get_or_compile(
            key,
            lambda: self._compile_entry(ks, fn.name, dev.cc, options.fastmath),
            relink=lambda ptx: self._link(ptx, dev.cc),
        )
        _print_kernel(options, fn.name, ks.source, entry.ptx)
        cubin = entry.cubin if self.cubins else None
        kernel = GPUKernel(
            cp=cp,
            ks=ks,
            ptx=entry.ptx,
            user_name=fn.name,
            capture_names=[c.name for c in fn.captures],
            device=dev,
            synchronize=self.mode == "unified",
            cubin=cubin if cubin is not None and cubin_arch(cubin) == dev.cc else None,
        )
        if kernel.cubin_error is not None:
            self.cubins = False
            note_once(
                "cubin-refused",
                f"the driver refused the cubin of '{fn.name}' ({kernel.cubin_error}); "
                "this backend loads kernels from PTX from now on",
            )
        if kernel.image == "cubin":
            self.cache.stats.cubin_loads += 1
        else:
            self.cache.stats.ptx_loads += 1
        self._loaded[key] = kernel
        return kernel

    def explain(self, fn: Function, options: CompileOptions, shape: tuple[int, ...]) -> str:
        """The GPU section of ``ol.explain`` (``offload.ptx.inspect``): the kernel as this
        backend loads it where a GPU is present, else its PTX and ptxas's figures."""
        try:
            load_cupy()
        except OffloadError:
            return describe(fn, options, shape)
        return describe(fn, options, shape, backend=self)

    def allocate(self, shape: tuple[int, ...], dtypes: Sequence[np.dtype[Any]]) -> list[Any]:
        """Fresh C-contiguous results: managed NumPy arrays or pooled CuPy arrays. Both
        modes allocate from a pool."""
        if self.mode == "unified":
            managed = self.managed_pool()
            outs = [managed.empty(shape, np.dtype(dt)) for dt in dtypes]
            for out in outs:
                # A recycled block the host read last: move it before the kernel writes it.
                owner = managed_buffer(out)
                if owner is not None:
                    prefetch(self._cp or self._bind_cupy(), owner, None)
            return outs
        pool = self.pool()
        return [pool.empty(shape, np.dtype(dt)) for dt in dtypes]

    def writable(self, out: Any) -> bool:
        """A C-contiguous managed result or device array (a plain host array, e.g. the
        ``out=`` of code ported from ``compute_p``, is staged and copied by the driver)."""
        cp = self._cp
        if cp is not None and type(out) is cp.ndarray:  # the warm device-mode out=
            return cupy_c_contiguous(out)
        if isinstance(out, np.ndarray) and not out.flags.writeable:
            return False  # the driver's full path refuses it (ValueError naming out=)
        try:
            output_pointer(out)
        except (TypeError, ValueError):
            return False
        return True

    def prepare_outputs(self, outs: Sequence[Any]) -> None:
        """Unified mode: prefetch the managed ``out=`` arrays whose pages the host touched
        (e.g. read a result between ping-pong passes): a kernel writing host-resident pages
        migrates them by demand faults, ~7x slower. Device arrays need nothing."""
        if self.mode != "unified":
            return
        for out in outs:
            owner = managed_buffer(out) if type(out) is np.ndarray else None
            if owner is not None:
                prefetch(self._cp or self._bind_cupy(), owner, None)

    def prepare_captures(self, captures: Sequence[Any]) -> list[Any]:
        """Arrays -> ``ArrayArg`` tuples on the device (copied unless already there,
        managed or frozen with ``use``); scalars pass through.

        The common warm cases are recognised by exact type, cheapest first: a CuPy array,
        a whole managed result (its pointer from its owner, not ``__array_interface__``),
        a frozen host array (its cached copy); anything else takes ``input_view``."""
        cp = self._cp or self._bind_cupy()
        cupy_array = cp.ndarray
        out: list[Any] = []
        stream_ptr = -1
        for c in captures:
            t = type(c)
            if t is cupy_array:
                out.append(cupy_arg(c))
            elif t is np.ndarray and c.ndim > 0:
                if stream_ptr < 0:
                    stream_ptr = int(cp.cuda.get_current_stream().ptr)
                owner = whole_block(c)
                if owner is not None and (c.flags.c_contiguous or c.flags.f_contiguous):
                    # Contiguous and as large as its block: it starts where the block does.
                    prefetch(cp, owner, stream_ptr)
                    out.append((owner.ptr, c.shape, strides_in_elements(c.strides, c.itemsize), c))
                    continue
                copy = self._frozen.lookup(cp, c) if not c.flags.writeable else None
                if copy is not None:
                    out.append(cupy_arg(copy))
                else:
                    out.append(view_arg(input_view(cp, c, stream_ptr, self._frozen)))
            elif _is_array(c):
                if stream_ptr < 0:
                    stream_ptr = int(cp.cuda.get_current_stream().ptr)
                out.append(view_arg(input_view(cp, c, stream_ptr, self._frozen)))
            elif _dlpack_only(c):
                # A torch/JAX tensor known by DLPack alone: CuPy's view of device memory,
                # NumPy's of host memory (then copied in like any host array).
                if stream_ptr < 0:
                    stream_ptr = int(cp.cuda.get_current_stream().ptr)
                on_host = c.__dlpack_device__()[0] == 1  # kDLCPU
                view = np.from_dlpack(c) if on_host else cp.from_dlpack(c)
                if type(view) is cupy_array:
                    out.append(cupy_arg(view))
                else:
                    out.append(view_arg(input_view(cp, view, stream_ptr, self._frozen)))
            else:
                out.append(c)
        return out

    def pinned_captures(self, values: Sequence[Any]) -> dict[int, Pinned]:
        """The captured arrays a kernel is specialised on (``offload.ptx.pinned``)."""
        return frozen_pinned(values, self._frozen)

    def launcher(
        self, fn: Function, kernel: Any, values: Sequence[Any], general: Launcher
    ) -> Launcher | None:
        """The warm lane's one-function launch of ``kernel`` (compiled from ``fn``) for
        captured values of these types (``offload.ptx.fused``), ``general`` where its
        first variant's guard fails; ``None`` where fusing does not apply."""
        if not isinstance(kernel, KernelChoice):
            return None
        cp = self._cp or self._bind_cupy()
        return fused_launcher(fn, kernel.first, values, cp.ndarray, general, self._frozen.lookup)

    def replay_launch(
        self,
        kernel: Any,
        shape: tuple[int, ...],
        dtypes: Sequence[np.dtype[Any]],
        values: Sequence[Any],
    ) -> Callable[..., list[Any] | None] | None:
        """Every array read in place (``device_pointer``): this launch frozen
        (``GPUKernel.freeze``), later ones writing only the arrays' and fresh results'
        addresses (unified mode: managed results, then the synchronise a unified launch
        makes); else ``None``. ``run`` returns ``None`` for a call whose array is not read
        in place (a frozen host array thawed since): the step launches as ever."""
        if 0 in shape:
            return None
        pointer = self.device_pointer
        if not all(type(v) in _NUMBERS or pointer(v) is not None for v in values):
            return None
        freeze = getattr(kernel, "freeze", None)
        dts = tuple(np.dtype(dt) for dt in dtypes)
        outs = [self.pool().empty(shape, dt) for dt in dts]
        made = None if freeze is None else freeze(shape, outs, self.prepare_captures(values))
        if made is None:
            return None
        frozen, caps = made
        fresh = self.fresh
        lead = kernel.leading() if isinstance(kernel, KernelChoice) else kernel
        name = str(getattr(lead, "user_name", "a kernel"))

        def run(*vals: Any) -> list[Any] | None:
            ptrs = [pointer(vals[k]) for k in caps]
            if None in ptrs:
                return None
            results = fresh(shape, dts)
            if results is None:
                return None
            frozen(*ptrs, *results[1])
            self.settle(name)
            return results[0]

        return run

    def fresh(
        self, shape: tuple[int, ...], dtypes: Sequence[np.dtype[Any]]
    ) -> tuple[list[Any], list[int]] | None:
        """Fresh results (``allocate``) and the device addresses a kernel writes them at;
        ``None`` where a result is not the pool's (not expected)."""
        made = self.allocate(shape, dtypes)
        if self.mode == "device":
            return made, [int(m.data.ptr) for m in made]
        owners = [managed_buffer(m) for m in made]
        if any(o is None for o in owners):
            return None
        return made, [o.ptr for o in owners if o is not None]

    def settle(self, name: str) -> None:
        """Unified mode: wait for the kernels launched on the current stream (the host may
        read their results at once); a failure is the ``KernelFault`` of kernel ``name``."""
        if self.mode != "unified":
            return
        try:
            self._cp.cuda.get_current_stream().synchronize()
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}"
            raise KernelFault(f"the GPU kernel of '{name}' failed: {why}") from exc

    def device_pointer(self, x: Any) -> int | None:
        """The device address a kernel reads array ``x`` at as it is, without a copy: a
        CuPy array's own; a managed array as large as its block (a unified-mode result)
        its own, prefetched where the host touched it (as ``prepare_captures``); an array
        frozen with ``ol.use`` its cached copy's (``FrozenArrays.lookup``, which refuses
        one thawed since); else ``None``."""
        cp = self._cp or self._bind_cupy()  # (a call may not have needed CuPy before)
        t = type(x)
        if t is cp.ndarray:
            return int(x.data.ptr)
        if t is not np.ndarray or x.ndim == 0:
            return None
        owner = whole_block(x)
        if owner is not None and x.flags.c_contiguous:
            prefetch(cp, owner, None)
            return owner.ptr
        if not x.flags.writeable:
            copy = self._frozen.lookup(cp, x)
            return None if copy is None else int(copy.data.ptr)
        return None

    # -- helpers -------------------------------------------------------------------------

    def key(
        self, fn: Function, options: CompileOptions, cc: tuple[int, int], ks: KernelSource
    ) -> str:
        """The kernel cache key of ``fn`` (DESIGN §3) compiled as ``ks``: the IR and the
        generated kernel source both, so that a change to the thread mapping or the
        emitter (which the IR does not show) never loads a stale kernel from the disk."""
        arg_types = [str(v.type) for v in fn.params] + [str(t) for t in fn.result_types]
        opts = f"{options.key()};index_bits={ks.index_bits}"
        text = f"{print_function(fn)}\n{ks.source}"
        return cache_key(text, arg_types, opts, cc, tool_versions())

    def pool(self) -> DevicePool:
        """Device mode's pool of device blocks (a device twin's: its unified backend's)."""
        if self._pool is None:
            owner = self._pool_owner
            self._pool = DevicePool(load_cupy()) if owner is None else owner.pool()
        return self._pool

    def managed_pool(self) -> ManagedPool:
        """Unified mode's pool of managed blocks."""
        if self._managed is None:
            self._managed = ManagedPool(load_cupy(), release=lambda: self.pool().free_all())
        return self._managed

    def _bind_cupy(self) -> Any:
        self._cp = load_cupy()
        return self._cp

    def _compile_entry(
        self, ks: KernelSource, user_name: str, cc: tuple[int, int], fast: bool
    ) -> CacheEntry:
        ptx = compile_ptx(ks, user_name, cc, fastmath=fast)
        meta = {"source": ks.source, "user_name": user_name}
        return CacheEntry(ptx, ks.name, meta, self._link(ptx, cc))

    def _link(self, ptx: str, cc: tuple[int, int]) -> bytes | None:
        """The cubin of ``ptx`` for ``cc`` (``None``: none, the PTX is loaded)."""
        return link_cubin(ptx, cc) if self.cubins else None


def _is_array(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        return x.ndim > 0
    if isinstance(x, (np.generic, int, float, bool)):
        return False
    return hasattr(x, "__cuda_array_interface__")  # (builds the dict for some types)


def _dlpack_only(x: Any) -> bool:
    """An array known by DLPack alone (not NumPy, CuPy, a scalar or a CUDA-interface
    object): the frontend takes it as an array when it has ``ndim`` and ``dtype``."""
    if isinstance(x, (np.ndarray, np.generic, int, float, bool)):
        return False
    return hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")


def _print_kernel(options: CompileOptions, name: str, source: str, ptx: str) -> None:
    """``ol.config.dump``'s ``source`` and ``ptx``."""
    if "source" in options.print_kernels:
        print(f"// kernel source of {name} (gpu)\n{source}")
    if "ptx" in options.print_kernels:
        print(f"// PTX of {name}\n{ptx}")
