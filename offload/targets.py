"""The targets behind ``compute_s``/``compute_p``/``compute_g`` and their arguments.

``split_target`` reads a call's ``(shape, fn)`` or ``(delayed,)`` arguments, ``check_out``
its ``out=`` (``indexing_differs``: the array subclasses refused); ``SEQ``,
``PAR`` and ``GPU`` resolve the backend of each entry point for the current configuration
(``GPU``: the simulator where ``ol.config.gpu_simulator`` is on, else the GPU in the
configured memory mode).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from offload.backend import Backend
from offload.config import config
from offload.delayed import Delayed, normalise_shape
from offload.frontend.captures import indexing_differs, refused_array_message
from offload.options import CompileOptions


def check_out(out: Any) -> None:
    """``TypeError`` where ``out=`` (an array or a tuple of arrays) is an array whose
    indexing differs from ndarray's (``indexing_differs``); other checks are the driver's."""
    for o in out if type(out) is tuple else (out,):
        t: type = type(o)
        if t is not np.ndarray and indexing_differs(t):
            raise TypeError(refused_array_message("out=", t))


def split_target(shape_or_delayed: Any, fn: Any) -> tuple[tuple[int, ...], Any]:
    """``(shape, target)`` of a ``compute_*(shape, fn)`` or ``compute_*(delayed)`` call."""
    # Fast lane for the usual call, an int or a tuple of plain non-negative ints and a
    # callable: no list; anything else takes the checking path below.
    t = type(shape_or_delayed)
    if fn is not None and callable(fn):
        if t is int:
            if shape_or_delayed >= 0:
                return (shape_or_delayed,), fn
        elif t is tuple:
            for n in shape_or_delayed:
                if type(n) is not int or n < 0:
                    break
            else:
                return shape_or_delayed, fn
    if isinstance(shape_or_delayed, Delayed):
        if fn is not None:
            raise TypeError("compute_*(delayed) takes no element function")
        return tuple(shape_or_delayed.shape), shape_or_delayed
    if fn is None:
        raise TypeError("compute_*(shape, fn): the element function is missing")
    if not callable(fn):
        raise TypeError(f"the element function must be callable, got {type(fn).__name__}")
    return normalise_shape(shape_or_delayed), fn


@functools.cache
def backend_named(name: str) -> Backend:
    """The one backend of each name (``cpu-seq``, ``cpu-par``, ``gpu-sim`` and
    ``gpu-sim-device`` (the simulator in each memory mode), ``gpu-unified``, ``gpu-device``);
    imported on first use (numba is slow to import)."""
    if name == "cpu-seq":
        from offload.cpu.backend import CPU_SEQ  # (numba is slow to import)

        return CPU_SEQ
    if name == "cpu-par":
        from offload.cpu.backend import CPU_PAR

        return CPU_PAR
    if name in ("gpu-sim", "gpu-sim-device"):
        from offload.ptx.sim import SimBackend

        return SimBackend("device" if name == "gpu-sim-device" else "unified")
    from offload.ptx.backend import GPUBackend

    return GPUBackend(mode=config.memory, cache_dir=config.cache_dir)


def inner_backend(backend: Backend) -> Backend | None:
    """Where a call on ``backend`` computes the arrays only its own kernels read
    (``Context.inner``): the unified GPU mode's device twin; ``None`` elsewhere (the
    backend itself)."""
    twin = getattr(backend, "device_twin", None)
    if twin is None or getattr(backend, "mode", "") != "unified":
        return None
    inner: Backend = twin()
    return inner


def _gpu_name() -> str:
    if config.gpu_simulator:
        return "gpu-sim" if config.memory == "unified" else "gpu-sim-device"
    return f"gpu-{config.memory}"


class Target:
    """The backend of one ``compute_*``, resolved once per configuration.

    ``config`` drops its cached ``CompileOptions`` whenever a field is assigned, so the
    identity of ``config.compile_options()`` stamps the configuration: while it is the
    stamp held here (held, so its id cannot be reused), no field changed and the backend
    found for it still stands. The pair is one tuple, replaced whole."""

    __slots__ = ("context", "name", "state")

    def __init__(self, name: Callable[[], str]) -> None:
        self.name = name
        self.state: tuple[CompileOptions | None, Any] = (None, None)
        self.context: Any = None
        """The collectives' context of the last call (``api._context``), or ``None``."""

    def resolve(self, options: CompileOptions) -> Backend:
        """The backend for ``options``' configuration (remembered until it changes)."""
        backend = backend_named(self.name())
        use_cache_dir = getattr(backend, "use_cache_dir", None)
        if use_cache_dir is not None:  # the CPU backends follow ol.config.cache_dir
            use_cache_dir(config.cache_dir)
        self.state = (options, backend)
        return backend


SEQ = Target(lambda: "cpu-seq")
PAR = Target(lambda: "cpu-par")
GPU = Target(_gpu_name)
TARGETS = {"cpu": PAR, "cpu-seq": SEQ, "cpu-par": PAR, "gpu": GPU}
"""``ol.explain``'s target names."""
