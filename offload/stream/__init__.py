"""Streaming on one GPU: ``compute_g`` over host inputs larger than the device memory budget.

    import offload as ol
    ol.config.device_memory_limit = 2 << 30        # bytes; default: the GPU's free memory
    y = ol.compute_g(n, lambda i: x[i - 1] + x[i] + x[i + 1] if 0 < i < n - 1 else x[i])
    y = ol.stream.compute_g(n, f)                   # always streamed (chunks of rows)

The result is computed in chunks of rows (``offload.stream.plan``); each chunk's kernel sees
global indices and each captured host array is cut to the chunk's read window, halo
included, found from the IR's index expressions (``offload.stream.window``). A captured
array whose reads the chunk does not bound (``a[b[i]]``, a loop over a whole axis) is copied
once whole if it fits, else a ``DoesNotFit`` error points at its read. Results are host
NumPy arrays, equal bit for bit to the unstreamed ones.

``compute_g`` streams by itself (``maybe_stream``) where ``ol.config.device_memory_limit``
is set and the inputs and results exceed it, and where the unstreamed call is refused
with ``MemoryError`` (more than the GPU has free). Streamed calls take no ``out=``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.backend import Backend, Kernel
from offload.config import config
from offload.diagnostics import OffloadError
from offload.stream import compiled as cache
from offload.stream.device import (
    SLOTS,
    device_backend,
    device_budget,
    stream_backend,
    transfer_rate,
)
from offload.stream.execute import PINNED, run_gpu, run_host
from offload.stream.fold import SPLIT_EVERY, BlockFold, SequentialFold, combine_tree
from offload.stream.plan import DoesNotFit, Plan, plan_chunks
from offload.stream.progress import Progress
from offload.stream.window import ReadWindows, WindowedFunction
from offload.targets import split_target

__all__ = [
    "BlockFold",
    "DoesNotFit",
    "Prepared",
    "SequentialFold",
    "compute_g",
    "device_backend",
    "device_budget",
    "fold_all",
    "maybe_stream",
    "plan",
    "prepare",
    "release",
]


def plan(shape: Any, fn: Any = None, *, dtype: Any = None, rows: int | None = None) -> Plan:
    """The chunks ``compute_g(shape, fn)`` would be streamed in under the current budget
    (for ``explain``-style inspection and tests)."""
    shape, target = split_target(shape, fn)
    found = cache.entry(target, len(shape))
    values = found.fetch(target)
    made = cache.compiled(found, target, len(shape), values, dtype, config.compile_options())
    return _plan(made, shape, values, "gpu-sim" if config.gpu_simulator else "gpu", rows)


def _plan(
    made: cache.Compiled,
    shape: tuple[int, ...],
    values: Sequence[Any],
    backend_name: str,
    rows: int | None,
) -> Plan:
    wf = made.wf
    reads = ReadWindows(made.ir, cache.extents(wf, values))
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
        device_budget(backend_name),
        slots=SLOTS if gpu else 1,
        rate=rate,
        rows=rows,
    )


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
    target: Any, shape: tuple[int, ...], dtype: Any = None, *, rows: int | None = None
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
        _plan(made, shape, values, backend.name, rows),
        values,
        cache.extents(wf, values),
        shape,
        tuple(t.dtype for t in wf.fn.result_types),
    )


def run(target: Any, shape: tuple[int, ...], dtype: Any = None, *, rows: int | None = None) -> Any:
    """Compute ``target`` (an element function or a delayed tree) over ``shape`` streamed.
    Returns host NumPy arrays (a tuple for several results)."""
    if not shape:
        raise OffloadError("streaming needs a result of rank >= 1 (it cuts the leading axis)")
    if 0 in shape:
        found = cache.entry(target, len(shape))
        values = found.fetch(target)
        options = config.compile_options()
        fn = cache.compiled(found, target, len(shape), values, dtype, options).wf.fn
        outs = [np.empty(shape, t.dtype) for t in fn.result_types]
        return outs[0] if len(outs) == 1 else tuple(outs)
    p = prepare(target, shape, dtype, rows=rows)
    progress = Progress(len(p.plan.chunks), config.progress)
    try:
        if p.backend.name == "gpu-sim":
            outs = [np.empty(shape, dt) for dt in p.dtypes]
            run_host(p.kernel, p.backend, p.wf, p.plan, p.values, p.extents, outs, progress)
        else:
            from offload.runtime.gpu import load_cupy

            outs = run_gpu(
                load_cupy(),
                p.kernel,
                p.backend,
                p.wf,
                p.plan,
                p.values,
                p.extents,
                shape,
                p.dtypes,
                SLOTS,
                progress,
            )
    finally:
        progress.close()
    return outs[0] if len(outs) == 1 else tuple(outs)


def fold_all(
    shape: Any,
    fn: Any = None,
    *,
    fold: BlockFold,
    dtype: Any = None,
    rows: int | None = None,
    split_every: int = SPLIT_EVERY,
) -> Any:
    """The fold of every element of ``compute_g(shape, fn)``, streamed: each chunk's
    partial (``fold.partial`` of the chunk's result where it is, on the device), then the
    partials combined in the fixed tree of ``offload.stream.fold.combine_tree``. No result
    is copied back. The extension point for the collectives' fold (``BlockFold``)."""
    shape_, target = split_target(shape, fn)
    if not shape_ or 0 in shape_:
        raise OffloadError("stream.fold_all needs a non-empty result of rank >= 1")
    p = prepare(target, shape_, dtype, rows=rows)
    if len(p.dtypes) != 1:
        raise OffloadError("stream.fold_all folds a function of one result")
    progress = Progress(len(p.plan.chunks), config.progress)
    try:
        if p.backend.name == "gpu-sim":
            outs = [np.empty(shape_, dt) for dt in p.dtypes]
            partials = run_host(
                p.kernel, p.backend, p.wf, p.plan, p.values, p.extents, outs, progress, fold
            )
        else:
            from offload.runtime.gpu import load_cupy

            partials = run_gpu(
                load_cupy(),
                p.kernel,
                p.backend,
                p.wf,
                p.plan,
                p.values,
                p.extents,
                shape_,
                p.dtypes,
                SLOTS,
                progress,
                fold,
            )
    finally:
        progress.close()
    return combine_tree(fold, partials, split_every)


def release() -> None:
    """Free the pinned host buffers streamed GPU runs keep for later runs."""
    PINNED.release()


def compute_g(shape: Any, fn: Any = None, *, dtype: Any = None, rows: int | None = None) -> Any:
    """``ol.compute_g`` always streamed: the result in chunks of rows (``rows`` per chunk,
    else the largest that fits the budget; see the module docstring). Returns host NumPy
    arrays equal bit for bit to ``ol.compute_g``'s."""
    shape, target = split_target(shape, fn)
    try:
        return run(target, shape, dtype, rows=rows)
    except OffloadError as err:
        if config.debug:
            raise
        raise err.with_traceback(None) from None


def maybe_stream(shape_or_delayed: Any, fn: Any, dtype: Any) -> Any:
    """The hook ``ol.compute_g`` calls where ``ol.config.device_memory_limit`` is set: the
    streamed result where the call's captured host arrays and results exceed the limit,
    else ``None`` (the call runs unstreamed)."""
    limit = config.device_memory_limit
    if limit is None:
        return None
    shape, target = split_target(shape_or_delayed, fn)
    if not shape:
        return None
    found = cache.entry(target, len(shape))
    values = found.fetch(target)
    arrays: list[Any] = [values[k] for k in cache.host_arrays(values)]
    need: int = sum(int(a.nbytes) for a in arrays)
    need += int(np.prod(shape, dtype=np.int64)) * sum(
        t.dtype.itemsize for t in found.lowered.ir.result_types
    )
    if need <= limit:
        return None
    return run(target, shape, dtype)


def stream_on_memory_error(shape_or_delayed: Any, fn: Any, dtype: Any) -> Any:
    """``ol.compute_g``'s second try after the unstreamed call was refused with
    ``MemoryError``: the streamed result (the budget is the GPU's free memory)."""
    shape, target = split_target(shape_or_delayed, fn)
    if not shape:
        return None
    return run(target, shape, dtype)
