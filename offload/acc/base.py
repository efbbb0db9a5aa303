"""The contract between a collective node and the graph scheduler.

Two kinds of node live on the delayed-array graph:

* element nodes (``offload.delayed.Delayed`` subclasses with ``lower_element``): their
  element at an index is an expression of their sources' elements, so the frontend fuses
  them into whatever consumes them (``map``, ``zip_with``, ``stencil``, a per-row
  ``fold`` whose element is a loop, ...);
* collectives (``Collective`` below): computed as a whole by a skeleton (a scan, a
  permute, a filter, the stages of a long reduction). The scheduler computes their
  sources first (each fused into one kernel, or kept as the arrays they are), calls
  ``materialise`` with those arrays, and hands the result to the consumers as an array
  leaf. A node object reached twice is materialised once (sharing by identity).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.backend import Backend
from offload.delayed import Delayed
from offload.diagnostics import OffloadError
from offload.frontend.nodes import ElementLowering, Index, NodePath
from offload.frontend.values import Val
from offload.options import CompileOptions


@dataclass(frozen=True)
class Context:
    """Where a collective is materialised: the backend of the ``compute_*`` call (its
    ``name`` says the target: ``cpu-seq``, ``cpu-par``, ``gpu-sim``, a GPU memory mode)
    and the options of that call (``ol.config`` at the time)."""

    backend: Backend
    options: CompileOptions
    determinism: str = "deterministic"
    """``"deterministic"`` (default), ``"cross_target"`` or ``"fast"``."""


class Collective(Delayed):
    """A node computed by a skeleton over its materialised sources (module docstring)."""

    @abc.abstractmethod
    def result_dtypes(self) -> tuple[np.dtype[Any], ...]:
        """The dtypes of the result (one per array of a tuple result), known without
        computing it."""

    @property
    def dtypes(self) -> tuple[np.dtype[Any], ...]:  # type: ignore[override]
        return self.result_dtypes()

    @abc.abstractmethod
    def materialise(self, ctx: Context, sources: Mapping[str, Any]) -> Any:
        """The result as an array (or a tuple of arrays) in the target's memory, given
        each source of ``sources()`` as an array (or tuple of arrays) in that memory."""

    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        raise OffloadError(
            f"internal: {type(self).__name__} is a collective; the graph scheduler "
            "materialises it before the tree is lowered"
        )
