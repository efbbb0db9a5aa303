"""Loading a kernel (its cubin, else its PTX) through CuPy and launching it; the
simulator's launcher.

The warm path is ``GPUKernel.launch``: no parsing, hashing or attribute queries -- the
loaded function, its resources and a per-parameter packer were all prepared at load time;
launch configurations are memoised per shape as the six numbers the driver takes.
"""

from __future__ import annotations

import math
import os
import tempfile
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from offload.diagnostics import KernelFault
from offload.ptx.args import ArgBuffer
from offload.ptx.config import (
    LaunchConfig,
    launch_config,
    tile_block,
    tile_count,
    tiled_launch_config,
    walked,
)
from offload.ptx.hooks import ERR_SLOTS
from offload.ptx.kernel_source import KernelSource, ParamKind
from offload.ptx.simarray import SimDeviceArray
from offload.runtime.frozen import FrozenLaunch
from offload.runtime.gpu import DeviceInfo, bind_thread


def load_function(cp: Any, image: str | bytes, name: str) -> tuple[Any, Any]:
    """(module, function) for entry ``name`` of ``image``: PTX text (``str``; the driver
    JIT-compiles it) or a cubin (``bytes``, an ELF image loaded as it is). The module must
    stay alive."""
    module = cp.cuda.function.Module()
    if isinstance(image, bytes):
        module.load(image)  # cuModuleLoadData takes a cubin as it is
        return module, module.get_function(name)
    try:
        module.load(image.encode() + b"\0")  # ... and PTX as NUL-terminated text
    except Exception:
        # Older CuPy: only a file path is accepted for PTX.
        fd, path = tempfile.mkstemp(suffix=".ptx")
        with os.fdopen(fd, "w") as f:
            f.write(image)
        try:
            module = cp.cuda.function.Module()
            module.load_file(path)
        finally:
            os.unlink(path)
    return module, module.get_function(name)


def function_attributes(cp: Any, function: Any) -> dict[str, int]:
    """Registers, local/shared memory and the thread limit of a loaded function."""
    out: dict[str, int] = {}
    drv = cp.cuda.driver
    for key, attr in (
        ("num_regs", "CU_FUNC_ATTRIBUTE_NUM_REGS"),
        ("max_threads_per_block", "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"),
        ("local_size_bytes", "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES"),
        ("shared_size_bytes", "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES"),
    ):
        value = getattr(function, key, None)
        if value is None and hasattr(drv, attr):
            value = drv.funcGetAttribute(getattr(drv, attr), function.ptr)
        if value is not None:
            out[key] = int(value)
    return out


class GPUKernel:
    """A loaded kernel: ``launch`` fills output views from capture views."""

    def __init__(
        self,
        *,
        cp: Any,
        ks: KernelSource,
        ptx: str,
        user_name: str,
        capture_names: Sequence[str],
        device: DeviceInfo,
        synchronize: bool,
        cubin: bytes | None = None,
    ) -> None:
        self.cp = cp
        self.source = ks
        self.ptx = ptx
        self.user_name = user_name
        self.capture_names = list(capture_names)
        self.device = device
        self.synchronize = synchronize
        """Wait for the kernel before returning (unified mode: the host reads results next)."""
        self.image = "ptx"
        """What the driver loaded: ``cubin`` (no JIT) or ``ptx`` (JIT-compiled)."""
        self.cubin_error: str | None = None
        """Why the driver refused ``cubin`` (the PTX was loaded instead), else ``None``."""
        loaded = None
        if cubin is not None:
            # A cubin from an nvJitLink newer than the driver does not load: the PTX does
            # (a cached cubin can never make a kernel fail).
            try:
                loaded = load_function(cp, cubin, ks.name)
                self.image = "cubin"
            except Exception as exc:
                self.cubin_error = f"{type(exc).__name__}: {exc}"
        if loaded is None:
            try:
                loaded = load_function(cp, ptx, ks.name)
            except Exception as exc:
                raise KernelFault(f"loading the GPU kernel of '{user_name}' failed: {exc}") from exc
        self.module, self.function = loaded
        self.attributes = function_attributes(cp, self.function)
        self._configs: dict[tuple[int, ...], LaunchConfig] = {}
        self.dims: dict[tuple[int, ...], tuple[int, int, int, int, int, int]] = {}
        """Shape -> (grid x, y, z, block x, y, z): the warm path's one lookup."""
        self._err = cp.zeros(ERR_SLOTS, dtype=np.int64) if ks.bounds_check else None
        self.args = ArgBuffer(ks, int(self._err.data.ptr) if self._err is not None else 0)
        """The parameter buffer (``offload.ptx.args``): packed under its lock per launch."""
        self.launch_kernel = cp.cuda.driver.launchKernel
        """The driver's ``cuLaunchKernel``."""
        self.fn_ptr = int(self.function.ptr)
        """The loaded function's handle."""

    def config(self, shape: tuple[int, ...]) -> LaunchConfig:
        """The launch configuration for ``shape`` (memoised)."""
        cfg = self._configs.get(shape)
        if cfg is None and self.source.tile is not None:
            cfg = tiled_launch_config(
                shape,
                self.source.tile,
                blocking=self.source.blocking,
                num_regs=self.attributes.get("num_regs", 32),
                sm_count=self.device.sm_count,
                shared_bytes=self.attributes.get("shared_size_bytes", 0),
                regs_per_sm=self.device.regs_per_sm,
                max_threads_per_sm=self.device.max_threads_per_sm,
            )
        if cfg is None:
            cfg = launch_config(
                walked(shape, self.source.blocking),
                num_regs=self.attributes.get("num_regs", 32),
                max_threads_per_block=self.attributes.get("max_threads_per_block", 1024),
                sm_count=self.device.sm_count,
                regs_per_sm=self.device.regs_per_sm,
                max_threads_per_sm=self.device.max_threads_per_sm,
            )
        if shape not in self._configs and len(self._configs) < 64:
            self._configs[shape] = cfg
        return cfg

    def launch(self, shape: tuple[int, ...], outs: Sequence[Any], captures: Sequence[Any]) -> None:
        """Run over ``shape``: ``outs`` are results of ``GPUBackend.allocate`` (or device
        arrays), array ``captures`` are ``ArrayArg`` tuples from ``prepare_captures``."""
        dims = self.dims.get(shape)
        if dims is None:
            if math.prod(shape) == 0:
                return
            cfg = self.config(shape)
            dims = (*cfg.grid, *cfg.block)
            if len(self.dims) < 64:
                self.dims[shape] = dims
        gx, gy, gz, bx, by, bz = dims
        bind_thread(self.cp)
        stream = self.cp.cuda.get_current_stream()
        args = self.args
        try:
            with args.lock:
                args.fill(shape, outs, captures)
                self.launch_kernel(
                    self.fn_ptr, gx, gy, gz, bx, by, bz, 0, stream.ptr, args.address, 0
                )
            if self.synchronize or self._err is not None:
                stream.synchronize()
        except Exception as exc:
            raise KernelFault(
                f"the GPU kernel of '{self.user_name}' failed: {type(exc).__name__}: {exc}"
            ) from exc
        if self._err is not None:
            self._check_bounds(shape)

    def freeze(
        self, shape: tuple[int, ...], outs: Sequence[Any], captures: Sequence[Any]
    ) -> tuple[FrozenLaunch, tuple[int, ...]] | None:
        """This launch (the arguments of ``launch``) as a ``FrozenLaunch`` whose later
        launches take new addresses for the captured arrays (the capture numbers
        returned, in order) and then for ``outs``; ``None`` where a launch does more than
        fill, launch and (unified mode) synchronise -- bounds checks -- or the values do
        not pack by struct. A frozen launch does not synchronise: its caller does
        (``GPUBackend.settle``)."""
        if self._err is not None or self.args.pack is None:
            return None
        if math.prod(shape) == 0:
            return None
        cfg = self.config(shape)
        args = self.args
        with args.lock:
            args.fill(shape, outs, captures)
            image = bytes(args.storage)
        slots = args.pointer_slots
        caps = tuple(sorted(k for kind, k in slots if kind == ParamKind.PTR))
        patch = [slots[ParamKind.PTR, k] for k in caps]
        if any((ParamKind.OUT, j) not in slots for j in range(len(outs))):
            return None
        patch += [slots[ParamKind.OUT, j] for j in range(len(outs))]
        dims = (*cfg.grid, *cfg.block)
        return FrozenLaunch(self.cp, self.fn_ptr, dims, image, args.offsets, patch), caps

    def _check_bounds(self, shape: tuple[int, ...]) -> None:
        assert self._err is not None
        record = self._err.get()
        if record[0]:
            self._err.fill(0)
            raise bounds_error(self.user_name, self.capture_names, shape, record)


class ElementIndexError(IndexError):
    """An out-of-bounds read that bounds checks caught, at ``element`` of the launch's
    index space (``shifted``: of a space that starts ``rows`` further, a streamed chunk's)."""

    def __init__(self, head: str, element: tuple[int, ...], tail: str) -> None:
        self.head, self.element, self.tail = head, element, tail
        super().__init__(f"{head}{element}{tail}")

    def shifted(self, rows: int) -> ElementIndexError:
        """The same fault, its element counted from ``rows`` rows before the launch's."""
        moved = (self.element[0] + rows, *self.element[1:]) if self.element else ()
        return ElementIndexError(self.head, moved, self.tail)


def bounds_error(
    user_name: str, capture_names: Sequence[str], shape: tuple[int, ...], record: Any
) -> ElementIndexError:
    """The ``IndexError`` for a fault record ``[flag, line, capture, linear element]``."""
    line, capture, linear = int(record[1]), int(record[2]), int(record[3])
    element = tuple(int(i) for i in np.unravel_index(linear, shape)) if shape else ()
    if capture == -1:  # ptx.hooks.LOCAL_SITE
        head = f"{user_name}: out-of-bounds index into a local array at element "
        return ElementIndexError(head, element, f" (line {line})")
    what = capture_names[capture] if 0 <= capture < len(capture_names) else f"#{capture}"
    head = f"{user_name}: out-of-bounds read of '{what}' at element "
    return ElementIndexError(head, element, f" (line {line})")


_SIMULATOR_LOCK = threading.Lock()
"""One simulated launch at a time in a process: numba's simulator keeps the running grid's
state (``threadIdx``, ``blockIdx``...) per thread in one global object, so two launches from
two host threads at once read each other's (``'Thread' object has no attribute
'threadIdx'``)."""


class SimKernel:
    """The same kernel source under numba's CUDA simulator; arrays are host NumPy arrays.
    Launches from several host threads run one after another (``_SIMULATOR_LOCK``)."""

    def __init__(self, ks: KernelSource, jitted: Any, user_name: str, capture_names: Sequence[str]):
        self.source = ks
        self.jitted = jitted
        self.user_name = user_name
        self.capture_names = list(capture_names)

    def launch(self, shape: tuple[int, ...], outs: Sequence[Any], captures: Sequence[Any]) -> None:
        if math.prod(shape) == 0:
            return
        from numba import cuda

        flat_caps: list[Any] = []
        for cap in captures:
            if isinstance(cap, np.ndarray) and cap.ndim > 0:
                flat_caps.append(np.ascontiguousarray(cap))
            else:
                flat_caps.append(cap)
        args: list[Any] = []
        ix = self.source.index_dtype.type
        for p in self.source.params:
            if p.kind == ParamKind.EXTENT:
                args.append(ix(shape[p.index]))
            elif p.kind == ParamKind.OUT:
                out = outs[p.index]
                args.append((out.host if type(out) is SimDeviceArray else out).reshape(-1))
            elif p.kind == ParamKind.PTR:  # read only: no copy back (a frozen one can't take it)
                args.append(cuda.In(flat_caps[p.index].reshape(-1)))  # type: ignore[attr-defined]
            elif p.kind == ParamKind.CAP_EXTENT:
                args.append(ix(flat_caps[p.index].shape[p.axis]))
            elif p.kind == ParamKind.CAP_STRIDE:
                arr = flat_caps[p.index]
                args.append(ix(arr.strides[p.axis] // arr.itemsize))
            elif p.kind == ParamKind.SCALAR:
                assert p.dtype is not None
                args.append(p.dtype.type(flat_caps[p.index]))
            else:
                args.append(np.zeros(ERR_SLOTS, dtype=np.int64))
        # Small blocks and a small grid: the simulator runs a Python thread per CUDA thread,
        # and a grid smaller than the index space exercises the grid-stride loops.
        t = self.source.tile
        if t is not None:  # two blocks at most: the tile loop takes several trips
            tiles = tile_count(shape, t, self.source.blocking)
            cfg = LaunchConfig((min(2, tiles), 1, 1), tile_block(shape, t), 1, 1)
        else:
            cfg = launch_config(
                walked(shape, self.source.blocking),
                num_regs=32,
                max_threads_per_block=64,
                sm_count=2,
                max_threads_per_sm=128,
            )
        with _SIMULATOR_LOCK:
            self.jitted[cfg.grid, cfg.block](*args)
        if self.source.bounds_check and args[-1][0]:
            raise bounds_error(self.user_name, self.capture_names, shape, args[-1])
