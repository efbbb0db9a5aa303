"""The replay lane: a warm ``compute_*`` of a delayed tree whose schedule was recorded.

A tree of folds and stencils (``Scheduled`` nodes that say they are ``replayable``) over
element nodes runs as a few kernels: the stages of a reduction tree, a fold tail, a
stencil's materialised source, the fused root. Scheduling it again on every call --
walking and rewriting the tree, looking up each stage's entry, reading its captures --
costs 100-300 us of Python per call, more than the kernels of a small fold.

So the first call of a tree records its schedule (``Recorder``): each kernel's launch
as a step, a function of its inputs (the tree's captured arrays, earlier steps' results)
that does the same work for other inputs of the same kinds. A later call whose captured
values look the same -- the same types, dtypes, shapes and strides, the same aliasing
between them, and the same scalars, bit for bit (so every size, neutral element and
captured number the schedule depends on is the same) -- runs the steps alone: fetch the
tree's captured values, allocate, launch.

A collective joins the lane where it says it is ``replayable``, records its skeleton work
as a step (a scan: ``Scan.runner``) and lowers to what it captures for the tree's entry
(``Collective.lower_captures``, under ``captures_only``: which values the tree captures,
the neutral element and the combine's among them). What the lane does not replay (the full
path runs, every call): a tree holding another collective (a segmented scan, a permute, a
filter: their skeletons do device work the recorder does not see), a call with ``dtype=``
or ``out=``, captured values of other kinds than arrays and numbers, a kernel specialised
on an array's contents, a fold or scan whose combine function captures values, and any
step whose inputs are not the tree's captured arrays or earlier results.
"""

from __future__ import annotations

import struct
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from offload import driver
from offload.acc.base import Context
from offload.acc.graph import COLLECTIVE, LEAF, SCHEDULED, kind
from offload.acc.graph import compute as compute_graph
from offload.frontend.nodes import captures_only

PLANS_PER_TREE = 8
"""Recorded schedules kept per tree structure (the newest; one per input signature)."""

_PLANS_LOCK = threading.Lock()

_IN, _STEP = 0, 1

_SCALARS: dict[type, Callable[[Any], object]] = {
    bool: lambda v: v,
    int: lambda v: v,
    float: lambda v: struct.pack("<d", v),
    np.bool_: bool,
    **dict.fromkeys((np.int8, np.int16, np.int32, np.int64), int),
    **dict.fromkeys((np.uint8, np.uint16, np.uint32, np.uint64), int),
    **{t: t.tobytes for t in (np.float16, np.float32, np.float64)},
}
"""The key of a captured number of each type: its value, bit for bit for floats (``-0.0``
and ``0.0`` differ, a NaN equals itself)."""


_REPLAYABLE = "_offload_replayable"
"""The attribute of a tree that remembers ``replayable`` (fixed by its frozen structure)."""


def replayable(root: object) -> bool:
    """Whether every node of ``root`` is an element node or a replayable scheduled node
    (no collective); remembered on ``root``."""
    known = getattr(root, _REPLAYABLE, None)
    if known is None:
        known = _replayable(root)
        try:  # noqa: SIM105  (contextlib.suppress costs ~0.4 us: every call of a new node)
            object.__setattr__(root, _REPLAYABLE, known)
        except (AttributeError, TypeError):  # (a node without attributes)
            pass
    return bool(known)


def _replayable(root: object) -> bool:
    todo, seen = [root], set()
    while todo:
        node: Any = todo.pop()
        k = kind(node)
        if k == LEAF or id(node) in seen:
            continue
        if k in (COLLECTIVE, SCHEDULED) and not getattr(node, "replayable", False):
            return False
        seen.add(id(node))
        todo.extend(src for _, src in node.sources())
    return True


def held_extents(root: object) -> tuple[tuple[int, ...], ...]:
    """The shape of every node of ``root``, in a fixed walk order: what a plan depends on
    beside the captured values (a ``generate``'s, ``backpermute``'s or ``extend``'s extents
    are the node's own, not a captured array's, and a rebuilt tree of the same structure
    may hold others)."""
    out: list[tuple[int, ...]] = []
    todo, seen = [root], set()
    while todo:
        node: Any = todo.pop()
        if kind(node) == LEAF or id(node) in seen:
            continue
        seen.add(id(node))
        out.append(tuple(node.shape))
        todo.extend(src for _, src in node.sources())
    return tuple(out)


def _cupy_ndarray() -> type | None:
    """CuPy's array type where CuPy is imported (its arrays are keyed without building
    their ``__cuda_array_interface__`` dict)."""
    cp = sys.modules.get("cupy")
    return getattr(cp, "ndarray", None)


def signature(values: Sequence[Any]) -> tuple[Any, ...] | None:
    """What a recorded schedule depends on in the tree's captured values, or ``None``
    (a value of a kind the lane does not key)."""
    sig: list[Any] = []
    first: dict[int, int] = {}
    cupy_array = _cupy_ndarray()
    for k, v in enumerate(values):
        t = type(v)
        key = _SCALARS.get(t)
        if key is not None:
            sig.append((t, key(v)))
            continue
        if (
            t is np.ndarray
            or t is cupy_array
            or (hasattr(v, "__cuda_array_interface__") and hasattr(v, "strides"))
        ):
            alias = first.setdefault(id(v), k)
            sig.append((t, v.dtype.str, v.shape, v.strides, alias))
            continue
        return None
    return tuple(sig)


@dataclass(frozen=True)
class Step:
    fn: Callable[..., Any]
    refs: tuple[tuple[int, Any], ...]
    """Per input: (``_IN``, value index), (``_STEP``, (step, component or -1)) or
    (``-1``, a constant)."""


@dataclass(frozen=True)
class Plan:
    """A recorded schedule: its steps and where the call's result comes from."""

    steps: tuple[Step, ...]
    result: tuple[int, Any]
    """A ref as in ``Step.refs``, or (``-2``, refs of a tuple result)."""

    def run(self, values: Sequence[Any]) -> Any:
        done: list[Any] = []
        for step in self.steps:
            done.append(step.fn(*[_fetch(ref, values, done) for ref in step.refs]))
        kind, where = self.result
        if kind == -2:
            return tuple(_fetch(ref, values, done) for ref in where)
        return _fetch(self.result, values, done)


def _fetch(ref: tuple[int, Any], values: Sequence[Any], done: list[Any]) -> Any:
    kind, where = ref
    if kind == _IN:
        return values[where]
    if kind == _STEP:
        step, comp = where
        return done[step] if comp < 0 else done[step][comp]
    return where


class Recorder:
    """Collects one call's steps (``Context.record``) and makes its ``Plan``."""

    def __init__(self, values: Sequence[Any]) -> None:
        self.values = values
        self.known: dict[int, tuple[int, Any]] = {}
        """id of an array -> its ref (the call's captured arrays, then steps' results)."""
        self.held: list[Any] = []
        """Every object ``known`` names (held, so that no id is reused meanwhile)."""
        for k, v in enumerate(values):
            if type(v) not in _SCALARS:
                self._know(v, (_IN, k))
        self.steps: list[Step] = []
        self.refused: str | None = None

    def _know(self, obj: Any, ref: tuple[int, Any]) -> None:
        self.known.setdefault(id(obj), ref)
        self.held.append(obj)

    def refuse(self, why: str) -> None:
        if self.refused is None:
            self.refused = why

    def ref(self, obj: Any) -> tuple[int, Any] | None:
        """Where ``obj`` comes from: a known array, else a number as a constant, else
        ``None`` (an array of unknown origin)."""
        if type(obj) in _SCALARS:
            return (-1, obj)
        return self.known.get(id(obj))

    def step(self, fn: Callable[..., Any], inputs: Sequence[Any], result: Any) -> None:
        if self.refused is not None:
            return
        refs = [self.ref(x) for x in inputs]
        if any(r is None for r in refs):
            self.refuse("a step reads an array that is neither captured nor computed")
            return
        n = len(self.steps)
        self.steps.append(Step(fn, tuple(refs)))  # type: ignore[arg-type]
        if isinstance(result, tuple):
            for c, part in enumerate(result):
                self._know(part, (_STEP, (n, c)))
        else:
            self._know(result, (_STEP, (n, -1)))

    def plan(self, result: Any) -> Plan | None:
        """The schedule that gave ``result``, or ``None`` (refused, or a result of unknown
        origin)."""
        if self.refused is not None:
            return None
        if isinstance(result, tuple):
            refs = [self.known.get(id(r)) for r in result]
            if any(r is None or r[0] != _STEP for r in refs):
                return None
            return Plan(tuple(self.steps), (-2, tuple(refs)))
        ref = self.known.get(id(result))
        if ref is None or ref[0] != _STEP:
            return None  # (a captured array returned as it is: not a fresh result)
        return Plan(tuple(self.steps), ref)


MISS = object()
"""``rerun``'s answer where the last call's plan does not serve this one."""

_WARM = "_offload_warm"
"""The attribute of a tree that holds its last replayed call: (backend, options,
determinism, entry, signature, plan)."""


def rerun(root: Any, backend: Any, options: Any, determinism: str) -> Any:
    """A warm ``compute_*(root)`` (no ``dtype=``, ``out=`` or trace) by the plan its last
    call ran, with nothing else looked up: the same backend and options objects (the
    configuration unchanged: ``offload.targets.Target``), the same determinism mode, the
    tree's entry still valid (``driver.tree_entry``) and its captured values of the same
    signature; else ``MISS`` (the caller takes the full path)."""
    warm = getattr(root, _WARM, None)
    if warm is None or warm[0] is not backend or warm[1] is not options or warm[2] != determinism:
        return MISS
    try:
        entry = _tree_entry(backend, root)
        values = entry.fetch(root)  # type: ignore[misc]
    except Exception:  # (the full path reports it)
        return MISS
    if entry is not warm[3] or signature(values) != warm[4]:
        return MISS
    return warm[5].run(values)


def _tree_entry(backend: Any, root: Any) -> Any:
    """``driver.tree_entry``, a collective in the tree lowered to what it captures
    (``captures_only``: the entry is for its ``fetch``; the tree itself never runs as one
    kernel)."""
    with captures_only():
        return driver.tree_entry(backend, root)


def _remember(root: Any, ctx: Context, entry: Any, sig: Any, plan: Plan) -> None:
    try:  # noqa: SIM105  (as in ``replayable``)
        object.__setattr__(
            root, _WARM, (ctx.backend, ctx.options, ctx.determinism, entry, sig, plan)
        )
    except (AttributeError, TypeError):  # (a node without attributes)
        pass


def compute(ctx: Context, root: Any, dtype: Any, out: Any) -> Any:
    """``compute_*(root, dtype=, out=)`` of a tree the graph scheduler runs: by a recorded
    plan where one matches (module docstring), else scheduled (and recorded)."""
    if dtype is not None or out is not None or ctx.trace is not None or not replayable(root):
        return compute_graph(ctx, root, dtype, out)
    try:
        entry = _tree_entry(ctx.backend, root)
        assert entry.fetch is not None
        values = entry.fetch(root)
    except Exception:  # (the full path reports it, where the schedule meets it)
        return compute_graph(ctx, root, dtype, out)
    sig = signature(values)
    if sig is None:
        return compute_graph(ctx, root, dtype, out)
    key = (ctx.options, ctx.determinism, sig, held_extents(root))
    plan = entry.plans.get(key)
    if plan is not None:
        _remember(root, ctx, entry, sig, plan)
        return plan.run(values)
    recorder = Recorder(values)
    result = compute_graph(_recording(ctx, recorder), root, None, None)
    made = recorder.plan(result)
    if made is not None:
        with _PLANS_LOCK:  # (Dask's threads record too)
            if len(entry.plans) >= PLANS_PER_TREE:
                entry.plans.pop(next(iter(entry.plans)))
            entry.plans[key] = made
        _remember(root, ctx, entry, sig, made)
    return result


def _recording(ctx: Context, recorder: Recorder) -> Context:
    return replace(ctx, record=recorder)
