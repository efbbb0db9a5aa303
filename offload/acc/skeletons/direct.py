"""Computing a collective now, without the graph scheduler: ``compute(node, target)``.

The graph scheduler (``offload.acc.graph``) materialises collectives inside a
``compute_*`` call; this helper does the same for a node whose sources are arrays, tuples
of arrays or other collectives (each materialised once), so that the skeletons can be
used and tested on their own.
"""

from __future__ import annotations

from typing import Any

from offload.acc.base import Collective, Context
from offload.options import CompileOptions


def backend_named(target: str) -> Any:
    """The backend object of a skeleton target name."""
    if target in ("cpu-seq", "cpu-par"):
        from offload.cpu.backend import CPU_PAR, CPU_SEQ

        return CPU_SEQ if target == "cpu-seq" else CPU_PAR
    if target == "gpu-sim":
        from offload.ptx.sim import SimBackend

        return SimBackend()
    if target == "gpu":
        from offload.ptx.backend import GPUBackend

        return GPUBackend("device")
    raise ValueError(f"unknown target {target!r}")


def compute(node: Any, target: str = "cpu-seq", determinism: str = "deterministic") -> Any:
    """``node`` materialised on ``target`` (``cpu-seq``, ``cpu-par``, ``gpu-sim``, ``gpu``)."""
    ctx = Context(backend_named(target), CompileOptions(), determinism)
    memo: dict[int, Any] = {}
    return _value(node, ctx, memo)


def _value(x: Any, ctx: Context, memo: dict[int, Any]) -> Any:
    if not isinstance(x, Collective):
        return x
    key = id(x)
    if key not in memo:
        sources = {attr: _value(src, ctx, memo) for attr, src in x.sources()}
        memo[key] = x.materialise(ctx, sources)
    return memo[key]
