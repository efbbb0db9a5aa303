"""The peer interface and registry."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Outputs = tuple[Any, ...]


@dataclass(frozen=True)
class Peer:
    """One peer implementation of one benchmark.

    ``prepare(inputs)`` uploads/derives what the timed region needs (excluded from kernel
    time, included in end-to-end time) and returns a zero-argument function that runs every
    iteration of the timed region and returns the outputs (device arrays on the GPU).
    """

    name: str
    on_gpu: bool
    prepare: Callable[[dict[str, Any]], Callable[[], Outputs]]
    needs: tuple[str, ...] = field(default=())
    """Modules that must import (``cupy``, ``jax``, ``cupyx.scipy.ndimage``)."""

    def available(self) -> str | None:
        """``None`` if usable, else why not (reported as n/a)."""
        for mod in self.needs:
            try:
                importlib.import_module(mod)
            except Exception as err:
                return f"{mod} unavailable: {type(err).__name__}"
        if self.on_gpu:
            try:
                import cupy

                cupy.cuda.runtime.getDeviceCount()
            except Exception as err:
                return f"no GPU: {type(err).__name__}"
        return None


def peers_for(name: str) -> list[Peer]:
    """Every peer of benchmark ``name`` (CPU first)."""
    from benchmarks.peers import cpu, gpu_cuda, gpu_libs, numba_loops

    return [
        *cpu.PEERS.get(name, []),
        *numba_loops.peers(name),
        *gpu_cuda.PEERS.get(name, []),
        *gpu_libs.PEERS.get(name, []),
    ]
