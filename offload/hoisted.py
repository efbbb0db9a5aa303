"""Running a function whose index-independent work was hoisted (``offload.opt.hoist``).

A function with a ``Function.prologue`` compiles to two kernels of the same backend: the
prologue, launched once per call over the index space ``(1,)``, whose results land in
one-element arrays of the backend's own kind (host, managed or device memory), and the
main kernel, which reads them as its trailing captures. Both launches go through the
backend's ``Kernel`` interface, so every target runs the prologue on itself (the GPU on
the GPU: a captured device array is never read by the host).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from offload.backend import Backend, Kernel
from offload.ir.core import Function
from offload.options import CompileOptions


class HoistedKernel:
    """The prologue's kernel, then the main kernel given its results."""

    def __init__(self, backend: Backend, prologue: Kernel, main: Kernel, fn: Function) -> None:
        assert fn.prologue is not None
        self.backend = backend
        self.prologue = prologue
        self.main = main
        self.dtypes: tuple[np.dtype[Any], ...] = tuple(t.dtype for t in fn.prologue.result_types)

    def launch(self, shape: tuple[int, ...], outs: Sequence[Any], captures: Sequence[Any]) -> None:
        """Run the prologue once (the caller launches nothing for an empty shape), then
        every element."""
        backend = self.backend
        hoisted = backend.allocate((1,), self.dtypes)
        backend.prepare_outputs(hoisted)
        self.prologue.launch((1,), hoisted, captures)
        self.main.launch(shape, outs, [*captures, *backend.prepare_captures(hoisted)])


def compile_kernel(backend: Backend, fn: Function, options: CompileOptions) -> Kernel:
    """``backend.compile(fn)``; for a function with a prologue, both kernels in one."""
    if fn.prologue is None:
        return backend.compile(fn, options)
    main = dataclasses.replace(fn, prologue=None)
    first = backend.compile(fn.prologue, options)
    return HoistedKernel(backend, first, backend.compile(main, options), fn)
