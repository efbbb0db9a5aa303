"""Streamed collectives: ``compute_g`` of ``fold``/``fold_all`` over host arrays larger than
the device memory budget, with the bits of the unstreamed call.

The fold's source -- its *producer*: an element tree (``map``, ``zip_with``,
``from_function``, ...) over host arrays, or a host array -- is computed in chunks of its
leading axis by the streamed windowed kernels (halos as for any streamed call), and the
chunks are reduced on the device by the collectives' kernels so that every partial of
the unstreamed reduction tree (``offload.acc.plan.stages``: fixed by the sizes) folds the
same elements in the same order:

* ``fold_all`` (or ``fold`` of a vector): the chunks are consecutive runs of the elements in
  row-major order. The tree's first stage has ``p`` partials. Strided (a combine that
  commutes): partial ``t`` folds the elements ``t, t + p, t + 2p, ...``; the first
  chunk's partials are that stage's kernel (``Partials``, from ``z``) over the chunk and
  each later chunk continues every partial where it stands (``continued``: one thread a
  partial, ``acc = f(acc, x)`` over its elements in the chunk, in order), so the partials
  stay on the device, chunk after chunk. Contiguous (any associative combine): partial
  ``t`` folds ``c`` consecutive elements, the chunks are cut at multiples of ``c``
  elements, and each chunk's partials are the stage's kernel over it. Then the ``p``
  partials finish as in the unstreamed call (a ``Fold`` over them: its stages are the
  rest of the same tree, which depends on the sizes only). Without stages (at most 64
  elements) the fold is one left fold: one partial, continued chunk by chunk.
* ``fold`` of a source of rank >= 2: rows are independent and the chunks cut whole rows,
  so the tree's first stage (or the fold itself, where it has no stages) is an element
  tree over the producer, streamed like any other; its partials, ``c`` times smaller,
  finish as above (streamed again where they exceed the budget too).

So a streamed fold gives the unstreamed ``compute_g``'s bits whatever the budget and the
chunks. Scans, permutes and filters stream in ``offload.stream.scans`` and
``offload.stream.reorder`` (``offload.stream.trees`` picks the module); this one also
holds what they share (``producer_of``, ``device_context``, ``cast``, ``to_host``, the
error); ``offload.stream.carry`` carries a ``fold_all``'s partials (numbers, or flat
tuples of up to four: an array a component). A ``fold1`` streams as a fold does: each
partial starts from its first element in the stage's kernel, as unstreamed. A
``fold_all`` of nested or wider tuples is not streamed: its ``compute_g`` raises
``StreamUnsupported`` where the host arrays it reads exceed
``ol.config.device_memory_limit``, and runs unstreamed otherwise (a fold whose source holds
a collective or shared work, or work after one: ``offload.stream.composite``).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from offload import driver
from offload.acc.base import Collective, Context, Scheduled
from offload.acc.commute import commutes
from offload.acc.fold import NO_Z, Fold, Partials
from offload.acc.graph import compute as compute_graph
from offload.acc.graph import needs_scheduler
from offload.acc.nodes import Leaf, as_arrays_source, as_source
from offload.acc.plan import Stage, stages, wide_rule
from offload.acc.values import items_key, shape_of
from offload.config import config
from offload.delayed import Reshape
from offload.diagnostics import OffloadError
from offload.frontend.nodes import ArrayNode
from offload.stream import calls
from offload.stream import compiled as cache
from offload.stream.carry import Carry
from offload.stream.device import device_budget, stream_backend, stream_backend_name
from offload.stream.plan import Plan

COVERED = (
    "streaming covers compute_g of fold, fold1 and fold_all, of the "
    "scans, of permute, scatter, filter and stencil, whose "
    "source is an element tree over host arrays (map, zip_with, from_function, ...) or a "
    "host array, and trees of these (work after one, one over another)"
)

PARTIAL_BYTES = 8
"""Bytes a partial takes at most (numbers): what a fold keeps on the device beside the
chunks (kept out of the budget), and a result element at most."""


class StreamUnsupported(OffloadError):
    """A ``compute_g`` over the memory budget whose tree streaming does not cover."""

    rule = "stream-unsupported"


@dataclass(frozen=True)
class StreamedFold:
    """A fold streaming covers (``recognise``)."""

    fold: Fold
    producer: ArrayNode
    """The element tree whose leading axis the chunks cut (a host array as a ``Leaf``)."""
    whole: bool
    """Every element is folded (``fold_all``): the cut axis is folded too."""

    def tree(self) -> tuple[Stage, ...]:
        """The unstreamed reduction tree's stages (as ``Fold.expand`` plans them on the
        GPU and its simulator)."""
        fold = self.fold
        wide = wide_rule(stream_backend_name(), config.determinism)
        return stages(
            math.prod(fold.shape),
            fold.n,
            wide=wide,
            commutes=wide and commutes(fold.f),
            lanes=fold.z is not NO_Z and items_key(fold.z) == "s",
        )


def recognise(root: object) -> StreamedFold:
    """``root`` as a fold streaming covers, else ``StreamUnsupported`` saying why."""
    if not isinstance(root, Fold):
        if isinstance(root, ArrayNode) and not isinstance(root, Scheduled | Collective):
            raise unsupported(f"its root is {_what(root)}, over {_inner(root)}")
        raise unsupported(f"its root is {_what(root)}")
    source = root.a
    whole = len(shape_of(source)) == 1
    if whole and isinstance(source, Reshape):
        source = source.x  # (fold_all of rank >= 2: its source read in row-major order)
    producer = producer_of(source, "the fold's source")
    key = items_key(root.z)
    if whole and key != "s" and not (isinstance(key, tuple) and set(key) == {"s"}):
        raise unsupported("it is a fold_all of nested tuples")
    if not shape_of(producer):
        raise unsupported("the fold's source is 0-d")
    return StreamedFold(root, producer, whole)


def producer_of(source: object, what: str) -> ArrayNode:
    """A collective's source as the element tree a streamed call computes in chunks (a
    host array as a ``Leaf``, a tuple as a ``Zip``), else ``StreamUnsupported`` naming
    ``what`` it is."""
    if isinstance(source, tuple | list):
        source = as_source(tuple(source))
    if isinstance(source, ArrayNode):
        if needs_scheduler(source):
            raise unsupported(f"{what} holds {_inner(source)}")
        return source
    if type(source) is np.ndarray:
        return Leaf(source)
    raise unsupported(f"{what} is not on the host ({type(source).__name__})")


def device_context() -> Context:
    """The context a streamed collective runs its device work in (the stream backend)."""
    backend = stream_backend()
    return Context(backend, config.compile_options(), config.determinism, run=driver.run)


def unsupported(why: str) -> StreamUnsupported:
    """The error for a tree streaming does not cover (``why``: which part and why), with
    the hint of what it covers."""
    return StreamUnsupported.at(  # type: ignore[return-value]
        f"streaming does not cover this tree: {why}",
        None,
        hint=f"{COVERED}; compute it in parts that fit (a fold_all of any element tree: "
        "ol.stream.fold_seq over slices of the host arrays), raise "
        "ol.config.device_memory_limit, or use offload.dask",
    )


def _what(node: object) -> str:
    return f"a {type(node).__name__}" if isinstance(node, ArrayNode) else type(node).__name__


def _inner(tree: ArrayNode) -> str:
    """What makes ``tree`` need the scheduler (for messages): its first collective or
    scheduled node, else shared work."""
    todo: list[object] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, Scheduled | Collective):
            return _what(node)
        if isinstance(node, ArrayNode):
            todo.extend(s for _, s in node.sources())
    return "a node used twice (shared work)"


def host_bytes(tree: object) -> int:
    """The bytes of the distinct host arrays ``tree`` reads: its array sources and the
    arrays its functions capture (closures and globals; arrays reached only through
    helpers are not counted: an estimate for trees streaming does not cover)."""
    found: dict[int, int] = {}
    seen: set[int] = set()
    todo: list[object] = [tree]
    while todo:
        x = todo.pop()
        if type(x) is np.ndarray:
            found[id(x)] = x.nbytes
        elif isinstance(x, tuple | list):
            todo.extend(x)
        elif isinstance(x, ArrayNode) and id(x) not in seen:
            seen.add(id(x))
            todo.extend(s for _, s in x.sources())
            for nf in x.functions():
                todo.extend(captured_arrays(nf.fn))
    return sum(found.values())


def captured_arrays(fn: Callable[..., Any]) -> list[Any]:
    """The host arrays ``fn`` captures (closure cells and globals it names)."""
    try:
        names = inspect.getclosurevars(fn)
    except (TypeError, ValueError):
        return []
    values = (*names.nonlocals.values(), *names.globals.values())
    return [v for v in values if type(v) is np.ndarray]


def _producer_bytes(sf: StreamedFold) -> int:
    """The bytes of the host arrays the producer reads (as a streamed call counts them)."""
    producer = sf.producer
    found = cache.entry(producer, len(shape_of(producer)))
    values: list[Any] = found.fetch(producer)
    return sum(int(values[k].nbytes) for k in cache.host_arrays(values))


def need(sf: StreamedFold) -> int:
    """Device bytes the unstreamed fold would take: its producer's host inputs and a
    partial per result element."""
    return _producer_bytes(sf) + PARTIAL_BYTES * _components(sf.fold) * math.prod(sf.fold.shape)


def covered(root: object) -> StreamedFold | None:
    """``recognise``'s fold, or ``None`` where streaming does not cover ``root``."""
    try:
        return recognise(root)
    except StreamUnsupported:
        return None


@dataclass(frozen=True)
class StreamedCall:
    """What a fold streams: the element tree computed in chunks, its shape and how its
    leading axis may be cut (``calls.Cut``), with the reduction tree's stages."""

    target: ArrayNode
    shape: tuple[int, ...]
    cut: calls.Cut
    stages: tuple[Stage, ...]
    first: Stage
    """The stage the chunks compute (``Stage(n, 1, n, True)``: a whole fold without
    stages, one partial)."""


def streamed_call(sf: StreamedFold) -> StreamedCall:
    """The call ``run`` streams for ``sf`` (module docstring)."""
    fold, tree = sf.fold, sf.tree()
    first = tree[0] if tree else Stage(fold.n, 1, fold.n, True)
    if not sf.whole:  # (any rows: each row of partials is computed whole)
        if not tree:
            node = replace(fold, a=sf.producer)
            return StreamedCall(node, tuple(fold.shape), calls.ANY_CUT, tree, first)
        part = Partials(fold.f, fold.z, sf.producer, *_args(first))
        return StreamedCall(part, tuple(part.shape), calls.ANY_CUT, tree, first)
    shape = shape_of(sf.producer)
    width = math.prod(shape[1:])
    reserve = 3 * first.p * PARTIAL_BYTES * _components(fold)
    if first.strided:  # the first chunk holds each partial's first element
        cut = calls.Cut(1, -(-first.p // max(width, 1)), reserve)
    else:  # chunks start at multiples of c elements
        granule = first.c // math.gcd(first.c, width) if width else 1
        cut = calls.Cut(granule, granule, reserve)
    return StreamedCall(sf.producer, shape, cut, tree, first)


def _components(fold: Fold) -> int:
    """Arrays a partial of ``fold`` takes: one, or one per component of a tuple."""
    key = items_key(fold.z)
    return len(key) if isinstance(key, tuple) else 1


def _args(st: Stage) -> tuple[int, int, int, bool, int]:
    return (st.n, st.p, st.c, st.strided, st.lanes)


def plan(root: object, rows: int | None = None) -> Plan:
    """The chunks ``compute_g(root)`` (a fold streaming covers) is streamed in."""
    call = streamed_call(recognise(root))
    found = cache.entry(call.target, len(call.shape))
    values = found.fetch(call.target)
    options = config.compile_options()
    made = cache.compiled(found, call.target, len(call.shape), values, None, options)
    name = stream_backend_name()
    return calls.plan_of(made, call.shape, values, name, rows=rows, cut=call.cut)


def run(sf: StreamedFold, dtype: Any = None, rows: int | None = None) -> Any:
    """The streamed fold (module docstring): host NumPy arrays (a tuple for a fold of
    tuples), the unstreamed ``compute_g``'s bits."""
    fold = sf.fold
    if 0 in shape_of(sf.producer):
        return finish(fold, dtype)  # (nothing to stream)
    call = streamed_call(sf)
    if not sf.whole:
        parts = calls.run(call.target, call.shape, dtype if not call.stages else None, rows=rows)
        if not call.stages:
            return parts
        return finish(replace(fold, a=as_arrays_source(parts), n=call.first.p), dtype)
    p = calls.prepare(call.target, call.shape, None, rows=rows, cut=call.cut)
    cp = None
    if p.backend.name != "gpu-sim":
        from offload.runtime.gpu import load_cupy

        cp = load_cupy()
    carry = Carry.of(sf, call, p, cp)
    calls.execute(p, carry)
    return finish_whole(sf, call, carry.current, dtype)


def finish_whole(sf: StreamedFold, call: StreamedCall, partials: Any, dtype: Any) -> Any:
    """A ``fold_all``'s result from the first stage's partials (``Carry.current``)."""
    if not call.stages:  # one left fold: its one partial is the result
        out = to_host(partials)
        if isinstance(out, tuple):
            dts = dtype if isinstance(dtype, tuple | list) else [dtype] * len(out)
            return tuple(_scalar(o, dt) for o, dt in zip(out, dts, strict=True))
        return _scalar(out, dtype)
    return finish(replace(sf.fold, a=as_arrays_source(partials), n=call.first.p), dtype)


def _scalar(out: Any, dtype: Any) -> Any:
    """A one-partial fold's result: its partial as a 0-d array (cast to ``dtype``)."""
    out = out.reshape(())
    return out if dtype is None else out.astype(dtype)


def finish(rest: Fold, dtype: Any) -> Any:
    """``rest`` (the fold over the partials so far) as the unstreamed call finishes it, on
    the device; streamed again where the host partials it reads exceed the budget."""
    backend = stream_backend()
    if host_bytes(rest) > device_budget(backend.name):
        sf = covered(rest)
        if sf is not None and 0 not in shape_of(sf.producer):
            return run(sf, dtype)
    ctx = Context(backend, config.compile_options(), config.determinism, run=driver.run)
    return to_host(compute_graph(ctx, rest, dtype, None))


def cast(out: Any, dtype: Any) -> Any:
    """A streamed collective's host result ``out`` as ``compute_g(..., dtype=)`` casts a
    collective's: the driver's element kernel over it (streamed: it may exceed the budget;
    a 0-d one unstreamed)."""
    if isinstance(out, tuple):
        return calls.run(as_source(out), tuple(out[0].shape), dtype)
    if out.ndim == 0:
        return to_host(device_context().run_tree(Leaf(out), (), dtype, None))
    return calls.run(Leaf(out), tuple(out.shape), dtype)


def to_host(x: Any) -> Any:
    """A result as host NumPy arrays (a tuple stays a tuple)."""
    if isinstance(x, tuple):
        return tuple(to_host(v) for v in x)
    if isinstance(x, np.ndarray):
        return x
    get = getattr(x, "get", None)
    return np.asarray(get() if get is not None else x)
