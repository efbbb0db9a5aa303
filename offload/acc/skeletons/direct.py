"""Computing a collective now, without the graph scheduler: ``compute(node, target)``.

The graph scheduler (``offload.acc.graph``) materialises collectives inside a
``compute_*`` call; this helper does the same for a node whose sources are arrays, tuples
of arrays or other collectives (each materialised once), so that the skeletons can be
used and tested on their own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from offload.acc.base import Collective, Context
from offload.delayed import Delayed
from offload.diagnostics import OffloadError
from offload.options import CompileOptions


class StandIn:
    """What a skeleton asks of the call's backend: its ``name`` (the target) and, on the
    GPU, its memory ``mode`` (``device`` here: results stay CuPy arrays)."""

    mode = "device"

    def __init__(self, name: str) -> None:
        if name not in ("cpu-seq", "cpu-par", "gpu-sim", "gpu"):
            raise ValueError(f"unknown target {name!r}")
        self.name = name

    def allocate(self, shape: tuple[int, ...], dtypes: Any) -> list[Any]:
        return [np.empty(shape, dt) for dt in dtypes]


def compute(node: Any, target: str = "cpu-seq", determinism: str = "deterministic") -> Any:
    """``node`` materialised on ``target`` (``cpu-seq``, ``cpu-par``, ``gpu-sim``, ``gpu``)."""
    ctx = Context(StandIn(target), CompileOptions(), determinism)  # type: ignore[arg-type]
    memo: dict[int, Any] = {}
    return _value(node, ctx, memo)


def _value(x: Any, ctx: Context, memo: dict[int, Any]) -> Any:
    if isinstance(x, Delayed) and not isinstance(x, Collective):
        raise OffloadError(
            f"compute(): the source {type(x).__name__} is a delayed array; compute it "
            "first (ol.compute_s/p/g), or compute the node with ol.compute_* once the graph "
            "scheduler is available"
        )
    if not isinstance(x, Collective):
        return x
    key = id(x)
    if key not in memo:
        sources = {attr: _value(src, ctx, memo) for attr, src in x.sources()}
        memo[key] = x.materialise(ctx, sources)
    return memo[key]
