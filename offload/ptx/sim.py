"""``SimBackend``: compute_g under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``).

The same variants as the GPU (``offload.ptx.plan.SIM_PLAN``: small tiles and lines) and the
same kernel source run as Python threads over host NumPy arrays, so CI without a GPU
executes compute_g. Nothing is cached on disk (there is no PTX). Results are NumPy arrays
in unified mode and ``SimDeviceArray`` (device memory's rules: ``get()``, no implicit
conversion) in device mode, as the GPU returns NumPy and CuPy arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from offload.backend import Launcher, Pinned, PreparedLaunches
from offload.ir.core import Function
from offload.options import CompileOptions
from offload.ptx.choice import KernelChoice, build_choice
from offload.ptx.compile import simulator_kernel
from offload.ptx.inspect import describe
from offload.ptx.kernel_source import build_kernel_source
from offload.ptx.launch import SimKernel
from offload.ptx.pinned import frozen_pinned
from offload.ptx.plan import SIM_PLAN, IndexVariant
from offload.ptx.simarray import SimDeviceArray
from offload.runtime.memory import frozen_table


class SimBackend(PreparedLaunches):
    """The simulator target (see ``offload.backend.Backend``)."""

    def __init__(self, mode: str = "unified") -> None:
        if mode not in ("unified", "device"):
            raise ValueError(f"unknown GPU memory mode {mode!r} (use 'unified' or 'device')")
        self.mode = mode
        """As the GPU's: ``device`` returns device arrays (``SimDeviceArray``)."""
        self.name = "gpu-sim"
        self._frozen = frozen_table()
        self._twin: SimBackend | None = None

    def device_twin(self) -> SimBackend:
        """This backend in the ``device`` mode, as the GPU's (``GPUBackend.device_twin``):
        a unified-mode call computes the arrays only its own kernels read there."""
        if self.mode == "device":
            return self
        if self._twin is None:
            twin = SimBackend("device")
            twin._frozen = self._frozen
            self._twin = twin
        return self._twin

    def compile(self, fn: Function, options: CompileOptions) -> KernelChoice:
        """The kernel variants of ``fn`` (optimised IR) under ``SIM_PLAN``."""
        return build_choice(
            fn,
            options,
            SIM_PLAN,
            lambda ir, index: self._kernel(ir, options, index),
            min_tiles=lambda: 1,
            host_guards=True,
        )

    @staticmethod
    def _kernel(fn: Function, options: CompileOptions, index: IndexVariant) -> SimKernel:
        ks = build_kernel_source(
            fn, bounds_check=options.bounds_check, index_bits=index.bits, unit_last=index.unit_last
        )
        if "source" in options.print_kernels:
            print(f"// kernel source of {fn.name} (gpu-sim)\n{ks.source}")
        names = [c.name for c in fn.captures]
        return SimKernel(ks, simulator_kernel(ks, fn.name), fn.name, names)

    def allocate(self, shape: tuple[int, ...], dtypes: Sequence[np.dtype[Any]]) -> list[Any]:
        """Fresh C-contiguous arrays: NumPy in unified mode, ``SimDeviceArray`` in device
        mode (where the GPU returns CuPy arrays)."""
        if self.mode == "device":
            return [SimDeviceArray(np.empty(shape, dtype=dt)) for dt in dtypes]
        return [np.empty(shape, dtype=dt) for dt in dtypes]

    def writable(self, out: Any) -> bool:
        """A writeable C-contiguous NumPy array (the layout a device kernel writes) or a
        simulated device array; anything else is staged and copied, as on the GPU."""
        if type(out) is SimDeviceArray:
            return True
        return (
            isinstance(out, np.ndarray)
            and bool(out.flags.c_contiguous)
            and bool(out.flags.writeable)
        )

    def prepare_outputs(self, outs: Sequence[Any]) -> None:
        """Host arrays need nothing."""

    def prepare_captures(self, captures: Sequence[Any]) -> list[Any]:
        """Host arrays as they are; a CuPy array given to the simulator is copied to the
        host."""
        return [_host(c) for c in captures]

    def pinned_captures(self, values: Sequence[Any]) -> dict[int, Pinned]:
        """As the GPU's (``offload.ptx.pinned``)."""
        return frozen_pinned(values, self._frozen)

    def launcher(
        self, fn: Function, kernel: Any, values: Sequence[Any], general: Launcher
    ) -> Launcher | None:
        """No fused launch: every call prepares its captures."""
        return None

    def explain(self, fn: Function, options: CompileOptions, shape: tuple[int, ...]) -> str:
        """The GPU section of ``ol.explain`` as the GPU would compile it (PTX for sm_90);
        inside numba's CUDA simulator, which replaces numba-cuda's compiler, a note
        saying so (there is no NVVM to make PTX)."""
        import numba

        if numba.config.ENABLE_CUDASIM:  # type: ignore[attr-defined]
            return (
                "== GPU: no PTX under numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1 replaces "
                "numba-cuda's compiler); run ol.explain(..., target='gpu') in a process "
                "without the simulator to see the PTX, registers and launch configuration"
            )
        return describe(fn, options, shape)


def _host(c: Any) -> Any:
    t = type(c)
    if t is np.ndarray or t is int or t is float or t is bool or isinstance(c, np.generic):
        return c
    if t is SimDeviceArray:
        return c.host
    if hasattr(c, "__cuda_array_interface__") and hasattr(c, "get"):
        return c.get()  # a CuPy array
    if hasattr(c, "__array_interface__"):
        return np.asarray(c)  # a host array by its interface: a view, no copy
    if hasattr(c, "__dlpack__"):
        return np.from_dlpack(c)  # a torch/JAX CPU tensor
    return c
