"""A streamed call from its target to its results: compile and plan (``prepare``), then run
the chunks on the simulator or through the GPU's pipeline (``execute``).

``offload.stream`` (element functions and delayed trees) and ``offload.stream.collectives``
(folds) both stream through these.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.backend import Backend, Kernel
from offload.config import config
from offload.diagnostics import OffloadError
from offload.out_rules import wanted_dtypes
from offload.stream import compiled as cache
from offload.stream.device import (
    SLOTS,
    device_budget,
    stream_backend,
    stream_backend_name,
    transfer_rate,
)
from offload.stream.execute import Reduce, run_gpu, run_host
from offload.stream.plan import Plan, plan_chunks
from offload.stream.progress import Progress
from offload.stream.window import ReadWindows, WindowedFunction, integer_scalars


@dataclass(frozen=True)
class Cut:
    """How a streamed call may cut its leading axis (``plan.plan_chunks``): chunks of a
    multiple of ``granule`` rows, at least ``least``, and ``reserve`` device bytes kept
    out of the budget for the call's own buffers (a fold's partials); the chunks after
    the first start at ``phase`` plus a multiple of the rows per chunk, each block
    widened by ``overlap`` rows (before, after), and ``work`` device bytes per result
    element are counted beside each chunk's results (a collective's buffers)."""

    granule: int = 1
    least: int = 1
    reserve: int = 0
    phase: int = 0
    overlap: tuple[int, int] = (0, 0)
    work: int = 0


ANY_CUT = Cut()


def plan_of(
    made: cache.Compiled,
    shape: tuple[int, ...],
    values: Sequence[Any],
    backend_name: str,
    *,
    rows: int | None,
    cut: Cut = ANY_CUT,
) -> Plan:
    """The chunks of a compiled streamed function over ``shape`` under the budget."""
    wf = made.wf
    reads = ReadWindows(made.ir, cache.extents(wf, values), integer_scalars(values))
    dtypes = [t.dtype for t in wf.fn.result_types]
    gpu = backend_name != "gpu-sim"
    rate = None
    if gpu:
        from offload.runtime.gpu import load_cupy

        rate = transfer_rate(load_cupy())
    return plan_chunks(
        reads,
        shape,
        values,
        cache.host_arrays(values),
        dtypes,
        max(device_budget(backend_name) - cut.reserve, 0),
        slots=SLOTS if gpu else 1,
        rate=rate,
        rows=rows,
        granule=cut.granule,
        least=cut.least,
        phase=cut.phase,
        overlap=cut.overlap,
        work=cut.work,
    )


def plan_for(
    target: Any, shape: tuple[int, ...], *, rows: int | None = None, cut: Cut = ANY_CUT
) -> Plan:
    """The chunks a streamed call of ``target`` over ``shape`` would run in (lowered and
    planned, no kernel compiled: for inspection, ``offload.stream.plan``)."""
    found = cache.entry(target, len(shape))
    values = found.fetch(target)
    made = cache.compiled(found, target, len(shape), values, None, config.compile_options())
    return plan_of(made, shape, values, stream_backend_name(), rows=rows, cut=cut)


@dataclass(frozen=True)
class Prepared:
    """A streamed call ready to run: its kernel, plan and captured values."""

    backend: Backend
    kernel: Kernel
    wf: WindowedFunction
    plan: Plan
    values: Sequence[Any]
    extents: dict[int, tuple[int, ...]]
    shape: tuple[int, ...]
    dtypes: tuple[np.dtype[Any], ...]


def prepare(
    target: Any,
    shape: tuple[int, ...],
    dtype: Any = None,
    *,
    rows: int | None = None,
    cut: Cut = ANY_CUT,
) -> Prepared:
    """Check, lower, compile and plan a streamed call (of a non-empty ``shape``)."""
    options = config.compile_options()
    backend = stream_backend()
    found = cache.entry(target, len(shape))
    values = found.fetch(target)
    made = cache.compiled(found, target, len(shape), values, dtype, options)
    wf = made.wf
    return Prepared(
        backend,
        cache.kernel(made, backend, options),
        wf,
        plan_of(made, shape, values, backend.name, rows=rows, cut=cut),
        values,
        cache.extents(wf, values),
        shape,
        tuple(t.dtype for t in wf.fn.result_types),
    )


def execute(
    p: Prepared, reduce: Reduce | None = None, outs: Sequence[Any] | None = None
) -> list[Any]:
    """Run a prepared call: its host results (one array per result; ``outs``: written into
    these, host arrays of the call's shape and dtypes), or with ``reduce`` each chunk's
    partial in chunk order (``execute.Reduce``; no result is copied back)."""
    progress = Progress(len(p.plan.chunks), config.progress)
    try:
        if p.backend.name == "gpu-sim":
            outs = [np.empty(p.shape, dt) for dt in p.dtypes] if outs is None else list(outs)
            partials = run_host(
                p.kernel, p.backend, p.wf, p.plan, p.values, p.extents, outs, progress, reduce
            )
            return outs if reduce is None else partials
        from offload.runtime.gpu import load_cupy

        return run_gpu(
            load_cupy(),
            p.kernel,
            p.backend,
            p.wf,
            p.plan,
            p.values,
            p.extents,
            p.shape,
            p.dtypes,
            SLOTS,
            progress,
            reduce,
            outs,
        )
    finally:
        progress.close()


def run(
    target: Any,
    shape: tuple[int, ...],
    dtype: Any = None,
    *,
    rows: int | None = None,
    out: Any = None,
) -> Any:
    """Compute ``target`` (an element function or a delayed tree) over ``shape`` streamed.
    Returns host NumPy arrays (a tuple for several results), or ``out`` (host NumPy
    arrays, ``host_out``) written in place under NumPy's ``out=`` rules."""
    if not shape:
        raise OffloadError("streaming needs a result of rank >= 1 (it cuts the leading axis)")
    if out is not None:
        return _run_into(target, shape, dtype, rows, out)
    if 0 in shape:
        found = cache.entry(target, len(shape))
        values = found.fetch(target)
        options = config.compile_options()
        fn = cache.compiled(found, target, len(shape), values, dtype, options).wf.fn
        outs = [np.empty(shape, t.dtype) for t in fn.result_types]
        return outs[0] if len(outs) == 1 else tuple(outs)
    outs = execute(prepare(target, shape, dtype, rows=rows))
    return outs[0] if len(outs) == 1 else tuple(outs)


def host_out(out: Any) -> bool:
    """Whether ``out=`` is what a streamed call writes into: a host NumPy array, or a
    tuple of them."""
    if type(out) is np.ndarray:  # (the usual case first: a warm call tests it)
        return True
    return type(out) is tuple and all(type(o) is np.ndarray for o in out)


def _run_into(target: Any, shape: tuple[int, ...], dtype: Any, rows: int | None, out: Any) -> Any:
    """``run`` into ``out``: checked as the unstreamed call checks it (shape, writeable,
    ``same_kind``) before any chunk runs, the kernel computing ``out``'s dtypes."""
    outs = out if type(out) is tuple else (out,)
    for o in outs:
        if tuple(o.shape) != shape:
            raise ValueError(f"out= has shape {tuple(o.shape)}, the result {shape}")
    found = cache.entry(target, len(shape))
    typed = found.typings.of(target, len(shape), found.fetch(target))
    want = wanted_dtypes(dtype, out, typed.ir.result_types)
    if 0 not in shape:
        assert want is not None
        p = prepare(target, shape, want if len(want) > 1 else want[0], rows=rows)
        reads = [p.values[k] for k in cache.host_arrays(p.values)]
        # Into ``out`` directly where the chunks cut it as they cut the result and no
        # captured array shares its memory (a chunk's halo would read rows an earlier
        # chunk wrote: NumPy's ``out=`` means the result of the inputs as they were).
        direct = all(o.flags.c_contiguous for o in outs) and not any(
            np.may_share_memory(o, r) for o in outs for r in reads
        )
        made = execute(p, outs=outs if direct else None)
        for o, m in zip(outs, made, strict=True):
            if m is not o:  # (computed into fresh arrays, then copied)
                np.copyto(o, m)
    return out
