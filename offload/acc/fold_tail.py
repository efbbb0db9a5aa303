"""A long fold on the GPU in two launches: the first stage of its reduction tree as an
element kernel (fused with the fold's producer), the rest in one ``fold_tail`` skeleton
launch (``offload.acc.skeletons.fold_src``) that computes the same partials in the same
order -- so the bits are those of the staged tree, in every mode.

Used on the GPU and its simulator where the tree has more than one stage, or one stage
and a long final fold, and where the partials' dtypes are the fold's result dtypes (the
final fold over them keeps its type); else ``Fold.expand`` runs every stage as an element
kernel, as before.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from offload.acc.base import Context
from offload.acc.combine import ScalarFunction, closure_kinds
from offload.acc.nodes import as_arrays_source
from offload.acc.plan import Stage
from offload.acc.skeletons.build import (
    GPU_TARGETS,
    MAX_BLOCKS,
    SIM_MAX_BLOCKS,
    Module,
    Remembered,
    captured,
    compile_module,
    working,
    xp_for,
)
from offload.acc.skeletons.deliver import deliver_to, delivered, results
from offload.acc.skeletons.fold_src import (
    GLOBAL_THREADS,
    SPREAD_SLAB,
    fold_tail_kernel,
    shared_values,
)
from offload.acc.skeletons.operands import (
    combine_for,
    components,
    neutral,
    pack,
    target_of,
)
from offload.acc.skeletons.scan_src import combine_wrapper
from offload.acc.skeletons.workspace import discard, scratch, stream_key
from offload.acc.values import from_items, items_key
from offload.frontend.nodes import function_key

Dt = np.dtype[Any]

_KEEPS_TYPE = Remembered(1024)
"""``keeps_type``'s answers."""


def applies(ctx: Context, rest: Sequence[Stage]) -> bool:
    """Whether the stages ``rest`` (after those computed) and the final fold may run in
    one launch: on the GPU and its simulator, where at least one stage is left (else the
    final fold alone is one element kernel, fused with its consumer)."""
    return str(ctx.backend.name).startswith("gpu") and len(rest) >= 1


def keeps_type(fold: Any, dts: tuple[Dt, ...]) -> bool:
    """Whether the final fold over partials of ``dts`` gives ``dts`` (its loop keeps the
    partials' type), remembered per combine, closure, neutral element and dtypes."""
    f: Callable[..., Any] = fold.f
    z = fold.z
    zkey = (items_key(z), repr(from_items(z)), type(z).__name__)
    key = (function_key(f), closure_kinds(f), tuple(d.str for d in dts), zkey)

    def probe() -> bool:
        leaves = tuple(np.empty((1,), d) for d in dts)
        one = replace(fold, a=as_arrays_source(leaves[0] if len(leaves) == 1 else leaves), n=1)
        return tuple(np.dtype(d) for d in one.dtypes) == dts

    ok: bool = _KEEPS_TYPE.get(key, probe)
    return ok


def finish(
    ctx: Context, fold: Any, has_z: bool, partials: Any, rest: Sequence[Stage]
) -> Any | None:
    """``fold``'s result from the ``partials`` of its stages so far (arrays of shape
    (*rows, p)) and the stages after them (``rest``, not empty), in one launch; ``None``
    where a row of partials is longer than the tail holds in shared memory and its first
    stage has more partials than the tail reads from global memory itself (a block a
    partial, ``fold_src.GLOBAL_THREADS``; spread over blocks, ``spread_slab``, as many as
    a shared buffer holds: the caller runs another stage first), a component is a bool,
    or the partials' type would change (``keeps_type``). ``partials`` may be the
    fold's own input array (``rest`` its whole tree).
    ``has_z``: ``fold`` has a neutral element (not ``fold1``)."""
    target = target_of(ctx)
    parts = components(partials)
    dts = tuple(np.dtype(x.dtype) for x in parts)
    *lead, p0 = parts[0].shape
    if any(dt.kind == "b" for dt in dts):
        return None  # (shared memory does not hold bools here, as in the scan's tiles)
    sh = shared_values(sum(dt.itemsize for dt in dts))
    from_global = p0 > sh  # (the first stage reads the row from global memory)
    rows = math.prod(lead)
    g = spread_slab(p0, rest[0], sh) if from_global and rows < SPREAD_ROWS else 0
    # (a block a partial of the first stage, or, spread, a shared buffer of its partials
    # for the block that finishes the row)
    if from_global and rest[0].p > (sh if g else min(GLOBAL_THREADS, sh)):
        return None
    if not keeps_type(fold, dts):
        return None
    sf = combine_for(fold.f, dts, "fold's combine function")
    caps = captured(target, sf.captures(), ctx.backend)
    zs = neutral(from_items(fold.z), dts, "fold") if has_z else []
    nlev, nf, levels = _levels(target, tuple(rest))
    module = _module(target, sf, dts, len(caps), has_z, rest[0].strided, from_global, g > 0)
    if ctx.trace is not None:
        ctx.trace.append((f"fold tail: {rows} row(s), {nlev} stage(s) and the final fold", None))
    i64 = np.int64
    tail = _Tail(
        target,
        ctx.backend,
        module,
        (i64(rows), i64(nlev), i64(nf), *levels),
        tuple(zs),
        tuple(caps),
        dts,
        tuple(lead),
        (g, rest[0].p),
    )
    result = tail(*parts)
    if ctx.record is not None:
        if caps:  # (read at this call: a later call may capture other values)
            ctx.record.refuse("the fold's combine function captures values")
        else:
            ctx.record.step(tail, parts, result)
    return result


@dataclass(frozen=True)
class _Tail:
    """The tail's launch for given partials: all else is fixed by the sizes, the dtypes
    and the combine (a step the replay lane may repeat: ``Context.record``)."""

    target: str
    backend: Any
    module: Module
    head: tuple[Any, ...]
    """rows, stages, final length and the level tables."""
    zs: tuple[Any, ...]
    caps: tuple[Any, ...]
    dts: tuple[Dt, ...]
    lead: tuple[int, ...]
    spread: tuple[int, int] = (0, 0)
    """(partials a slab, first-stage partials) of a spread first stage (``spread_slab``),
    else (0, ...)."""
    _fast: list[Any] = field(default_factory=list, compare=False)
    """``[parts' shape, launch, device_pointer, stream_key]`` of later calls on the GPU
    (``Module.freeze``): the partials' shape fixed by the first call, whose arrays the
    kernel read in place (a replayed step's inputs keep their layout: the plan's
    signature, or fresh results of the step before)."""

    def __call__(self, *parts: Any) -> Any:
        fast = self._fast
        if fast and parts[0].shape == fast[0] and (not self.spread[0] or _same_stream(fast)):
            ptrs = [fast[2](x) for x in parts]
            made = None if None in ptrs else self.backend.fresh(self.lead, self.dts)
            if made is not None:
                fast[1](*ptrs, *made[1])
                self.backend.settle("fold")  # (unified: the host may read the result)
                return pack(made[0])
        rows = math.prod(self.lead)
        p0 = parts[0].shape[-1]
        xs = [working(self.target, x, self.backend).reshape(rows, p0) for x in parts]
        mine, outs = results(self.backend, self.target, (rows,), self.dts)
        args: tuple[Any, ...] = (*self.head, *xs, *self.zs, *outs)
        g, p = self.spread
        wkey = None
        if g:
            wkey, ws, count = scratch(self.target, rows, p, self.dts)
            args = (*args, *ws, count)
            most = MAX_BLOCKS if self.target == "gpu" else SIM_MAX_BLOCKS
            blocks = min(rows * -(-p // g), most)
        else:
            blocks = min(rows, MAX_BLOCKS)
        args = (*args, *self.caps)
        try:
            self.module.launch("fold_tail", rows, *args, blocks=blocks)
        except BaseException:
            if wkey is not None:
                discard(wkey)  # (its counters may be left counting)
            raise
        pointer = getattr(self.backend, "device_pointer", None)
        if (
            not fast
            and self.target == "gpu"
            and pointer is not None
            and _in_place(xs, parts, pointer)
        ):
            m, h, nz = len(xs), len(self.head), len(self.zs)
            variable = [*range(h, h + m), *range(h + m + nz, h + 2 * m + nz)]
            made = self.module.freeze("fold_tail", rows, args, variable, blocks)
            if made is not None:
                fast[:] = [parts[0].shape, made, pointer, stream_key(self.target)]
        delivered(self.backend, self.target)  # (unified: written in place)
        return pack([deliver_to(self.backend, self.target, o.reshape(self.lead)) for o in mine])


def _same_stream(fast: list[Any]) -> bool:
    """Whether a spread tail's frozen launch (``fast``) serves the launches made now: its
    scratch and counter are those of this host thread and stream (``workspace``)."""
    return bool(stream_key("gpu") == fast[3])


SPREAD_THREADS = 512
"""Threads a block of a spread tail (any count works: every loop of its kernel strides by
the block's threads)."""

SPREAD_ROWS = 128
"""A tail of fewer rows than this spreads its first stage over blocks (``spread_slab``):
with a block a row, fewer rows than a GPU has multiprocessors (132 on an H100 or H200)
leave most of them idle while one reads each row."""


def spread_slab(n: int, stage: Stage, sh: int) -> int:
    """The partials a block folds where the tail's first stage (``stage``, over rows of
    ``n`` values read from global memory) is spread over blocks (``fold_src``'s
    ``spread``), else 0: where a slab's values fit the shared buffers (``2 * sh``) and
    the row has at least two slabs."""
    per = -(-n // stage.p) if stage.strided else stage.c
    if SPREAD_SLAB * per > 2 * sh or stage.p < 2 * SPREAD_SLAB:
        return 0
    return SPREAD_SLAB


def _in_place(xs: Sequence[Any], parts: Sequence[Any], pointer: Callable[[Any], Any]) -> bool:
    """Whether the working arrays ``xs`` launched are the ``parts`` read in place: at the
    address ``pointer`` gives each (no copy was made for this call)."""
    for x, p in zip(xs, parts, strict=True):
        where = pointer(p)
        if where is None or int(x.data.ptr) != where:
            return False
    return True


_MODULES = Remembered()
"""Compiled tail modules (``_module``)."""
_LEVELS = Remembered()
"""Level tables on the device (``_levels``)."""


def _module(  # noqa: PLR0917  (what the module's text depends on)
    target: str,
    sf: ScalarFunction,
    dts: tuple[Dt, ...],
    n_caps: int,
    has_z: bool,
    strided: bool,
    from_global: bool,
    spread: bool,
) -> Module:
    """The compiled tail module, remembered: a warm call makes no source text."""

    def make() -> Module:
        src = "\n\n".join(
            [
                sf.source(gpu=target in GPU_TARGETS),
                combine_wrapper("ol_comb", dts, n_caps, flip=False, segmented=False),
                fold_tail_kernel(
                    dts,
                    n_caps,
                    has_z=has_z,
                    strided=strided,
                    from_global=from_global,
                    spread=spread,
                ),
            ]
        )
        # (the simulator runs a thread per GPU thread: its usual small blocks)
        threads = None
        if from_global and target == "gpu":
            threads = SPREAD_THREADS if spread else GLOBAL_THREADS
        return compile_module(
            target, src, ["ol_comb", "cmb"], ["fold_tail"], {}, threads=threads, bounded=True
        )

    gpu = target in GPU_TARGETS
    key = (target, sf.source(gpu=gpu), dts, n_caps, has_z, strided, from_global, spread)
    module: Module = _MODULES.get(key, make)
    return module


def _levels(target: str, rest: tuple[Stage, ...]) -> tuple[int, int, list[Any]]:
    """(stages, final length, [ns, ps, cs] as arrays of the target), remembered: a warm
    call copies nothing to the device."""

    def make() -> tuple[int, int, list[Any]]:
        xp = xp_for(target)
        tables = ([st.n for st in rest], [st.p for st in rest], [st.c for st in rest])
        return (len(rest), rest[-1].p, [xp.asarray(np.array(v, np.int64)) for v in tables])

    made: tuple[int, int, list[Any]] = _LEVELS.get((target, rest), make)
    return made
