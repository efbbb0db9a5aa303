"""``GPUBackend``: the GPU target behind ``offload.backend.Backend`` (compute_g).

Modes: ``unified`` (default) -- results are NumPy arrays over CUDA managed memory and the
call waits for the kernel; ``device`` -- results are CuPy arrays from a size-class pool and
launches are asynchronous on the current CuPy stream. With ``simulator=True`` (the default
when ``NUMBA_ENABLE_CUDASIM=1``) the same kernel source runs under numba's CUDA simulator
on host NumPy arrays, so CI without a GPU executes compute_g.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from offload.backend import Pinned
from offload.diagnostics import OffloadError
from offload.ir.core import ConstArray, Function
from offload.ir.printer import print_function
from offload.options import CompileOptions
from offload.ptx import variants
from offload.ptx.blocked import BlockedChoice
from offload.ptx.cache import DEFAULT_MAX_BYTES, CacheEntry, KernelCache, cache_key
from offload.ptx.compile import compile_ptx, simulator_kernel, tool_versions
from offload.ptx.fused import Launcher, fused_launcher
from offload.ptx.guard import Fits, GuardedKernel, has_unit_variant, make_guard
from offload.ptx.kernel_source import KernelSource, build_kernel_source
from offload.ptx.launch import GPUKernel, SimKernel
from offload.ptx.variants import kernel_ir
from offload.runtime.gpu import device_info, load_cupy
from offload.runtime.memory import (
    ManagedBuffer,
    ManagedPool,
    cupy_c_contiguous,
    frozen_table,
    input_view,
    managed_buffer,
    output_pointer,
    prefetch,
)
from offload.runtime.pool import DevicePool
from offload.runtime.views import cupy_arg, strides_in_elements, view_arg

Mode = Literal["unified", "device"]

PINNED_BYTES = 1024
"""The largest frozen array a kernel is specialised on: a stencil's or filter's weights,
small enough to stay in the constant cache and to keep the kernel's text small."""


def simulator_enabled() -> bool:
    """Whether numba's CUDA simulator is on (it must be set before numba.cuda is imported)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0")


class GPUBackend:
    """Compiles optimised IR to PTX (cached in memory and on disk) and runs it."""

    def __init__(
        self,
        mode: Mode | str = "unified",
        cache_dir: str | os.PathLike[str] | None = None,
        simulator: bool | None = None,
        max_cache_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        if mode not in ("unified", "device"):
            raise OffloadError(f"unknown GPU memory mode {mode!r} (use 'unified' or 'device')")
        self.mode: Mode = "unified" if mode == "unified" else "device"
        self.simulator = simulator_enabled() if simulator is None else simulator
        self.name = "gpu-sim" if self.simulator else "gpu"
        self.cache = KernelCache(cache_dir, max_cache_bytes)
        self._loaded: dict[str, GPUKernel] = {}
        """Cache key -> loaded kernel (the in-process level above the PTX cache)."""
        self._pool: DevicePool | None = None
        self._managed: ManagedPool | None = None
        self._cp: Any = None
        """The ``cupy`` module once the first GPU call has loaded it."""
        self._frozen = frozen_table()

    # -- Backend protocol ----------------------------------------------------------------

    def compile(self, fn: Function, options: CompileOptions) -> GuardedKernel:
        """Compile ``fn`` (optimised IR) for the GPU or the simulator: the kernel with 32-bit
        index arithmetic, and the 64-bit one for launches outside its guard (made when a
        launch first needs it; ``offload.ptx.guard``). With captured arrays, the first
        choice is the 32-bit kernel that also takes their last-axis strides to be 1 (what
        C-contiguous arrays have), and the general 32-bit kernel is made when a launch
        first passes an array with another last-axis stride."""

        def guarded(fits: Fits) -> Fits:
            return _host_guard(fits) if self.simulator else fits

        def general() -> GuardedKernel:
            wide = functools.partial(self._variant, fn, options, 64)
            return GuardedKernel(self._variant(fn, options, 32), guarded(make_guard(fn)), wide)

        if not has_unit_variant(fn):
            return general()
        unit = self._variant(fn, options, 32, unit_last=True)
        return GuardedKernel(unit, guarded(make_guard(fn, unit_last=True)), general)

    def _variant(
        self,
        fn: Function,
        options: CompileOptions,
        bits: int,
        blockings: tuple[tuple[int, int], ...] | None = None,
        *,
        unit_last: bool = False,
    ) -> Any:
        """The kernel of ``fn`` with ``bits``-wide index arithmetic (and unit last-axis
        strides with ``unit_last``). A register-blocked one gives way to the next smaller
        blocking (at last the unblocked kernel) on index spaces whose tiles would not fill
        the SMs (``offload.ptx.blocked``)."""
        if self.simulator:
            return self._kernel(fn, options, bits, None, unit_last)
        blockings = variants.BLOCKINGS if blockings is None else blockings
        kernel = self._kernel(fn, options, bits, blockings, unit_last)
        if not kernel.source.blocking:
            return kernel
        smaller = blockings[blockings.index(kernel.source.blocking) + 1 :]
        return BlockedChoice(
            kernel,
            functools.partial(self._variant, fn, options, bits, smaller, unit_last=unit_last),
            min_tiles=device_info().sm_count,
        )

    def _kernel(
        self,
        fn: Function,
        options: CompileOptions,
        bits: int,
        blockings: tuple[tuple[int, int], ...] | None,
        unit_last: bool = False,
    ) -> GPUKernel | SimKernel:
        """The kernel of ``fn`` with ``bits``-wide index arithmetic (cached by key);
        ``blockings`` as ``kernel_ir`` takes them."""
        fn = kernel_ir(fn, options, bits, simulator=self.simulator, blockings=blockings)
        ks = build_kernel_source(
            fn, bounds_check=options.bounds_check, index_bits=bits, unit_last=unit_last
        )
        names = [c.name for c in fn.captures]
        if self.simulator:
            return SimKernel(ks, simulator_kernel(ks, fn.name), fn.name, names)
        cp = load_cupy()
        dev = device_info()
        key = self.key(fn, options, dev.cc, ks)
        kernel = self._loaded.get(key)
        if kernel is not None:
            return kernel
        entry = self.cache.get_or_compile(
            key, lambda: self._compile_entry(ks, fn.name, dev.cc, options.fastmath)
        )
        kernel = GPUKernel(
            cp=cp,
            ks=ks,
            ptx=entry.ptx,
            user_name=fn.name,
            capture_names=names,
            device=dev,
            synchronize=self.mode == "unified",
        )
        self._loaded[key] = kernel
        return kernel

    def allocate(self, shape: tuple[int, ...], dtypes: Sequence[np.dtype[Any]]) -> list[Any]:
        """Fresh C-contiguous results: managed NumPy arrays, pooled CuPy arrays, or (under
        the simulator) plain NumPy arrays. Both GPU modes allocate from a pool."""
        if self.simulator:
            return [np.empty(shape, dtype=dt) for dt in dtypes]
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
        if self.simulator:
            return isinstance(out, np.ndarray) and bool(out.flags.c_contiguous)
        cp = self._cp
        if cp is not None and type(out) is cp.ndarray:  # the warm device-mode out=
            return cupy_c_contiguous(out)
        try:
            output_pointer(out)
        except (TypeError, ValueError):
            return False
        return True

    def prepare_outputs(self, outs: Sequence[Any]) -> None:
        """Unified mode: prefetch the managed ``out=`` arrays whose pages the host touched
        (e.g. read a result between ping-pong passes): a kernel writing host-resident pages
        migrates them by demand faults, ~7x slower. Device arrays need nothing."""
        if self.simulator or self.mode != "unified":
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
        if self.simulator:
            return [self._host(c) for c in captures]
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
                owner = getattr(c.base, "offload_owner", None)
                if (
                    type(owner) is ManagedBuffer
                    and c.nbytes == owner.nbytes
                    and (c.flags.c_contiguous or c.flags.f_contiguous)
                ):
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
            else:
                out.append(c)
        return out

    def pinned_captures(self, values: Sequence[Any]) -> dict[int, Pinned]:
        """The captured arrays a kernel is specialised on: host arrays frozen with
        ``offload.use``, of at most ``PINNED_BYTES`` (their contents become constants in the
        kernel: constant-index reads fold, others read the constant bank). A later call
        must pass the same array with the same contents: they are compared on every call
        (a kilobyte at most), since a frozen view's base, or an array thawed and frozen by
        hand, can change under its freeze record."""
        table = self._frozen
        pinned: dict[int, Pinned] = {}
        for k, v in enumerate(values):
            if type(v) is not np.ndarray or not 0 < v.nbytes <= PINNED_BYTES or v.ndim == 0:
                continue
            if table.record(v) is None or v.dtype.kind not in "biuf":
                continue
            value = ConstArray.of(v)

            def same(x: Any, v: Any = v, data: bytes = value.data) -> bool:
                return x is v and x.tobytes() == data

            pinned[k] = Pinned(value, same)
        return pinned

    def fused_launcher(
        self, fn: Function, kernel: Any, values: Sequence[Any], general: Launcher
    ) -> Launcher | None:
        """The warm lane's one-function launch of ``kernel`` (compiled from ``fn``) for
        captured values of these types (``offload.ptx.fused``), ``general`` where its
        first kernel's guard fails; ``None`` where fusing does not apply."""
        if self.simulator or not isinstance(kernel, GuardedKernel):
            return None
        cp = self._cp or self._bind_cupy()
        return fused_launcher(fn, kernel.narrow, values, cp.ndarray, general)

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
        """Device mode's pool of device blocks."""
        if self._pool is None:
            self._pool = DevicePool(load_cupy())
        return self._pool

    def managed_pool(self) -> ManagedPool:
        """Unified mode's pool of managed blocks."""
        if self._managed is None:
            self._managed = ManagedPool(load_cupy())
        return self._managed

    def _bind_cupy(self) -> Any:
        self._cp = load_cupy()
        return self._cp

    @staticmethod
    def _compile_entry(
        ks: KernelSource, user_name: str, cc: tuple[int, int], fast: bool
    ) -> CacheEntry:
        ptx = compile_ptx(ks, user_name, cc, fastmath=fast)
        return CacheEntry(ptx, ks.name, {"source": ks.source, "user_name": user_name})

    @staticmethod
    def _host(c: Any) -> Any:
        if _is_array(c) and hasattr(c, "__cuda_array_interface__") and hasattr(c, "get"):
            return c.get()  # a CuPy array given to the simulator
        return c


def _host_guard(fits: Fits) -> Fits:
    """``fits`` over the simulator's captures (host arrays, not ``ArrayArg`` tuples)."""

    def host_fits(shape: tuple[int, ...], captures: Sequence[Any]) -> bool:
        caps = [
            (0, c.shape, strides_in_elements(c.strides, c.itemsize)) if _is_array(c) else c
            for c in captures
        ]
        return fits(shape, caps)

    return host_fits


def _is_array(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        return x.ndim > 0
    if isinstance(x, (np.generic, int, float, bool)):
        return False
    return hasattr(x, "__cuda_array_interface__")  # (builds the dict for some types)
