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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np

from offload.backend import Backend
from offload.delayed import Delayed
from offload.diagnostics import OffloadError
from offload.frontend.nodes import (
    ElementLowering,
    Index,
    NodePath,
    lowering_captures_only,
    lowering_types_only,
)
from offload.frontend.values import TupleVal, Val
from offload.options import CompileOptions


class Recorder(Protocol):
    """What a call that may be replayed (``offload.replay``) is told of its device work.

    ``step``: ``fn(*inputs)`` returned ``result`` (an array or a tuple of arrays); ``fn``
    does the same work for other inputs of the same kinds, touching nothing else, so a
    later call of the same tree may run the recorded steps alone. ``refuse``: this call's
    work cannot be replayed (``why`` says what)."""

    def step(self, fn: Callable[..., Any], inputs: Sequence[Any], result: Any) -> None: ...

    def refuse(self, why: str) -> None: ...


@dataclass(frozen=True)
class Context:
    """Where a collective is materialised: the backend of the ``compute_*`` call (its
    ``name`` says the target: ``cpu-seq``, ``cpu-par``, ``gpu-sim``, a GPU memory mode)
    and the options of that call (``ol.config`` at the time)."""

    backend: Backend
    options: CompileOptions
    determinism: str = "deterministic"
    """``"deterministic"`` (default), ``"cross_target"`` or ``"fast"``."""
    trace: list[tuple[str, Any]] | None = None
    """Where ``compute`` records each kernel it runs (``ol.explain``), or ``None``."""
    run: Callable[..., Any] | None = None
    """The driver's ``run(backend, target, shape, dtype, out, options)``, handed in by the
    top (``api``, ``explain``): the collectives sit below the driver's callers and do not
    import it."""
    record: Recorder | None = None
    """Where each kernel's work is recorded for the replay lane (``offload.replay``), or
    ``None``."""
    inner: Backend | None = None
    """Where the arrays only the call's own kernels read are computed (a collective's
    sources, a shared node, a long fold's stages), where not on ``backend``: the unified
    mode's device twin (``GPUBackend.device_twin``) -- device arrays, no synchronise;
    the host sees only the call's result."""

    def compute(self, node: Delayed, what: str = "") -> Any:
        """``node`` (an element tree holding no collective: the scheduler replaced them by
        arrays) computed into a new array (or a tuple of arrays) on this context's target,
        as ``compute_*`` computes it: one fused kernel. The array is the call's own
        (``inner``)."""
        if self.trace is not None:
            self.trace.append((what or type(node).__name__, node))
        backend = self.backend if self.inner is None else self.inner
        return self._run(backend, node, tuple(node.shape), None, None)

    def run_tree(self, tree: Delayed, shape: tuple[int, ...], dtype: Any, out: Any) -> Any:
        """The driver's ``run`` of ``tree``, the call's result (told to ``record`` where
        one is set)."""
        return self._run(self.backend, tree, shape, dtype, out)

    def _run(
        self, backend: Backend, tree: Delayed, shape: tuple[int, ...], dtype: Any, out: Any
    ) -> Any:
        if self.run is None:
            raise OffloadError("internal: this collective context has no driver to run kernels")
        if self.record is not None:
            return self.run(backend, tree, shape, dtype, out, self.options, record=self.record)
        return self.run(backend, tree, shape, dtype, out, self.options)


def length_known(a: object) -> bool:
    """Whether ``a``'s shape is its computed shape: no ``bounded`` collective (a filter)
    in its tree, whose length is known only once computed."""
    todo, seen = [a], set()
    while todo:
        x = todo.pop()
        if isinstance(x, tuple | list):
            todo.extend(x)
            continue
        if not isinstance(x, Delayed) or id(x) in seen:
            continue
        if isinstance(x, Collective) and x.bounded:
            return False
        seen.add(id(x))
        todo.extend(src for _, src in x.sources())
    return True


class Scheduled(Delayed):
    """An element node the scheduler looks at before the tree is lowered: it may be
    rewritten (``expand``: a long fold into the stages of its reduction tree) and it may
    ask for some sources as arrays (``materialised_sources``: a stencil reads each element
    of its source many times, so a source that is not trivial is computed first)."""

    replayable: ClassVar[bool] = False
    """Whether ``expand`` does its device work only through ``Context.compute`` and steps
    it tells ``Context.record`` (the replay lane may then run a later call of the same
    tree from the recorded steps: ``offload.replay``)."""

    def expand(self, ctx: Context) -> object | None:
        """A replacement of this node (its sources already scheduled) for ``ctx``'s target:
        a tree, an array or a tuple of arrays; ``None`` to keep it as it is."""
        return None

    def materialised_sources(self) -> tuple[str, ...]:
        """Attributes of the sources the scheduler must compute to arrays unless they are
        trivial (arrays, index remappings of arrays)."""
        return ()


class Collective(Delayed):
    """A node computed by a skeleton over its materialised sources (module docstring)."""

    bounded: ClassVar[bool] = False
    """Whether ``shape`` is only an upper bound, the length known once computed (a
    filter): a node built over it checks its extents when the scheduler has it
    (``length_known``)."""

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
        if lowering_types_only():  # (``Delayed.dtypes`` of a tree over this collective)
            stand_ins = [
                lo.captured(dt.type(0), (*path, ("dtype", k)))
                for k, dt in enumerate(self.result_dtypes())
            ]
            return stand_ins[0] if len(stand_ins) == 1 else TupleVal(tuple(stand_ins))
        got = self.lower_captures(lo, path, idx) if lowering_captures_only() else None
        if got is None:
            raise OffloadError(
                f"internal: {type(self).__name__} is a collective; the graph scheduler "
                "materialises it before the tree is lowered"
            )
        return got

    def lower_captures(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val | None:
        """This collective's lowering under ``captures_only`` where the replay lane may
        record it: a value of its element's type that reads every value it captures, at
        those values' paths (never computed); ``None`` where it cannot."""
        return None
