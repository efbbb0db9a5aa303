"""The interface between the driver and a backend (CPU: offload/cpu, GPU: offload/ptx).

The driver owns the dispatch table; a backend owns compilation, output allocation and
launching. Everything backend-specific (numba, CuPy) stays behind this protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np

from offload.ir.core import ConstArray, Function
from offload.options import CompileOptions


class Kernel(Protocol):
    """A compiled element function, ready to fill output arrays."""

    def launch(self, shape: tuple[int, ...], outs: Sequence[Any], captures: Sequence[Any]) -> None:
        """Compute every element of ``shape`` into ``outs`` (one array per result).

        ``captures`` are the current captured values in ``Function.captures`` order: arrays
        (NumPy, or device arrays for the GPU) and NumPy scalars of the parameter's type.
        """
        ...


class Pinned(NamedTuple):
    """A captured array a backend specialises its kernel on (``Capture.value``), and the
    test a later call's value must pass for that kernel to serve it (it is this array,
    unchanged)."""

    value: ConstArray
    same: Callable[[Any], bool]


Launcher = Callable[[tuple[int, ...], Sequence[Any], Sequence[Any]], None]
"""``(shape, outs, values)``: run a kernel over ``shape`` into ``outs`` with the captured
``values`` as the warm lane's reader returns them."""


class Backend(Protocol):
    """One target: ``cpu-seq``, ``cpu-par``, ``gpu`` or ``gpu-sim``. The driver calls
    nothing of a backend but what is named here."""

    name: str

    def compile(self, fn: Function, options: CompileOptions) -> Kernel:
        """Compile optimised IR (raises ``CompileError`` naming the user's function)."""
        ...

    def allocate(self, shape: tuple[int, ...], dtypes: Sequence[np.dtype[Any]]) -> list[Any]:
        """Fresh output arrays, one per dtype (the GPU's live in unified or device memory)."""
        ...

    def writable(self, out: Any) -> bool:
        """Whether a kernel can write straight into ``out`` (a user's ``out=`` array);
        if not, the driver computes into fresh outputs and copies into it."""
        ...

    def prepare_outputs(self, outs: Sequence[Any]) -> None:
        """Make a user's ``out=`` arrays ready for a kernel to write (unified GPU memory:
        move managed ones the host touched to the device first)."""
        ...

    def prepare_captures(self, captures: Sequence[Any]) -> list[Any]:
        """Turn current captured values into what ``Kernel.launch`` takes (e.g. copy host
        arrays to the device); scalars pass through."""
        ...

    def pinned_captures(self, values: Sequence[Any]) -> dict[int, Pinned]:
        """The captured values the backend specialises kernels on, by capture position
        (``Capture.value``; the GPU's: small frozen arrays). Empty for most targets."""
        ...

    def launcher(
        self, fn: Function, kernel: Any, values: Sequence[Any], general: Launcher
    ) -> Launcher | None:
        """The warm lane's launch of ``kernel`` (compiled from ``fn``) for captured values
        of the types of ``values``, calling ``general`` where it cannot serve a call;
        ``None``: the warm lane uses ``general`` (prepare the captures, launch)."""
        ...

    def replay_launch(
        self,
        kernel: Any,
        shape: tuple[int, ...],
        dtypes: Sequence[np.dtype[Any]],
        values: Sequence[Any],
    ) -> Callable[..., list[Any] | None] | None:
        """A replayed step's launch of ``kernel`` over ``shape`` (``offload.replay``):
        ``run(*values)`` for later values of the kinds of ``values`` (the same types,
        shapes, strides and scalars: the plan's signature) returning fresh results of
        ``dtypes``, or ``None`` where it cannot serve that call; ``None``: the step
        prepares its captures and launches each time."""
        ...

    def explain(self, fn: Function, options: CompileOptions, shape: tuple[int, ...]) -> str:
        """The target's part of ``ol.explain`` for optimised IR ``fn``: its kernel
        pipeline's passes, the kernel source and what else the target knows."""
        ...


class PreparedLaunches:
    """A backend whose replayed steps prepare their captures and launch each time (the
    CPU's: numba's dispatcher does its own argument work; the simulator's)."""

    def replay_launch(
        self,
        kernel: Any,
        shape: tuple[int, ...],
        dtypes: Sequence[np.dtype[Any]],
        values: Sequence[Any],
    ) -> Callable[..., list[Any] | None] | None:
        """No frozen launch (``Backend.replay_launch``)."""
        return None
