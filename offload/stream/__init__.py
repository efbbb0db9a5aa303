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

import math
import time
import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.backend import Backend, Kernel
from offload.config import config
from offload.diagnostics import OffloadError
from offload.driver import specialise
from offload.frontend.lower import Lowered, capture_type_key
from offload.frontend.nodes import delayed_key
from offload.frontend.reader import Fetcher, make_fetcher, make_resolution_test
from offload.ir.core import Function
from offload.lowering import check_and_lower
from offload.options import CompileOptions
from offload.stream.execute import run_gpu, run_host
from offload.stream.fold import SPLIT_EVERY, BlockFold, SequentialFold, combine_tree
from offload.stream.plan import DoesNotFit, Plan, plan_chunks
from offload.stream.progress import Progress
from offload.stream.window import ReadWindows, WindowedFunction, windowed
from offload.targets import backend_named, split_target

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
]

UNLIMITED = 1 << 62
"""The budget of a target without device memory (the simulator) when no limit is set."""


@dataclass
class _Compiled:
    wf: WindowedFunction
    ir: Function
    """The optimised IR the windowed one was made from (read windows are found in it)."""
    kernels: dict[str, Kernel]
    """Backend name -> the windowed kernel."""


@dataclass
class _Entry:
    lowered: Lowered
    fetch: Fetcher
    valid: Any
    compiled: dict[tuple[Any, ...], _Compiled]


_ENTRIES: dict[tuple[Any, ...], _Entry] = {}
"""Lowerings and compiled windowed kernels of streamed functions (a cache)."""


def _key(target: Any, rank: int) -> tuple[Any, ...]:
    if isinstance(target, types.FunctionType):
        return (target.__code__, id(target.__globals__), rank)
    return (delayed_key(target), rank)


def _entry(target: Any, rank: int) -> _Entry:
    key = _key(target, rank)
    entry = _ENTRIES.get(key)
    if entry is not None and entry.valid is not None and not entry.valid(target):
        entry = None
    if entry is None:
        lowered = check_and_lower(target, rank)
        entry = _Entry(
            lowered, make_fetcher(lowered.captures), make_resolution_test(lowered.resolved), {}
        )
        _ENTRIES[key] = entry
    return entry


def _wanted(dtype: Any, nresults: int) -> tuple[np.dtype[Any], ...] | None:
    if dtype is None:
        return None
    dts = dtype if isinstance(dtype, tuple | list) else (dtype,) * nresults
    if len(dts) != nresults:
        raise ValueError(f"dtype= names {len(dts)} dtype(s) but the function returns {nresults}")
    return tuple(np.dtype(d) for d in dts)


def _compiled(  # noqa: PLR0917  (the call's facts)
    entry: _Entry,
    target: Any,
    rank: int,
    values: Sequence[Any],
    dtype: Any,
    options: CompileOptions,
) -> _Compiled:
    """The windowed IR for these capture types (with the optimised IR it came from)."""
    lowered = entry.lowered
    want = _wanted(dtype, len(lowered.ir.result_types))
    ckey = (capture_type_key(values), want, options)
    hit = entry.compiled.get(ckey)
    if hit is None:
        if entry.compiled:
            lowered = check_and_lower(target, rank)  # (other capture types: lower again)
        ir = specialise(lowered, want, options)
        hit = _Compiled(windowed(ir), ir, {})
        entry.compiled[ckey] = hit
    return hit


def _kernel(compiled: _Compiled, backend: Backend, options: CompileOptions) -> Kernel:
    kernel = compiled.kernels.get(backend.name)
    if kernel is None:
        kernel = backend.compile(compiled.wf.fn, options)
        compiled.kernels[backend.name] = kernel
    return kernel


def _extents(wf: WindowedFunction, values: Sequence[Any]) -> dict[int, tuple[int, ...]]:
    return {k: tuple(values[k].shape) for k in wf.arrays}


def _host_arrays(values: Sequence[Any]) -> list[int]:
    return [k for k, v in enumerate(values) if type(v) is np.ndarray and v.ndim > 0]


def device_budget(backend_name: str) -> int:
    """The device memory a streamed run may use: ``ol.config.device_memory_limit`` if set,
    else the GPU's free memory less a safety margin (``UNLIMITED`` for the simulator)."""
    limit = config.device_memory_limit
    if limit is not None:
        return int(limit)
    if backend_name == "gpu-sim":
        return UNLIMITED
    from offload.runtime.gpu import load_cupy
    from offload.runtime.memory import safety_margin

    cp = load_cupy()
    free, total = (int(v) for v in cp.cuda.runtime.memGetInfo())
    return max(free - safety_margin(total), 0)


_RATE: dict[str, float] = {}
"""The measured pinned host-to-device rate (bytes/s) of this process's GPU (a cache)."""


def transfer_rate(cp: Any) -> float:
    """Pinned host-to-device bytes per second, measured once per process (64 MiB, best of
    three): bounds the chunk size (``offload.stream.plan``)."""
    rate = _RATE.get("h2d")
    if rate is None:
        nbytes = 64 << 20
        host = np.frombuffer(cp.cuda.alloc_pinned_memory(nbytes), np.uint8, nbytes)
        dev = cp.empty(nbytes, np.uint8)
        best = math.inf
        for _ in range(3):
            start = time.perf_counter()
            cp.cuda.runtime.memcpy(dev.data.ptr, host.ctypes.data, nbytes, 1)
            best = min(best, time.perf_counter() - start)
        rate = nbytes / best
        _RATE["h2d"] = rate
    return rate


def _result_bytes(shape: tuple[int, ...], wf: WindowedFunction) -> int:
    return math.prod(shape) * sum(t.dtype.itemsize for t in wf.fn.result_types)


def plan(shape: Any, fn: Any = None, *, dtype: Any = None, rows: int | None = None) -> Plan:
    """The chunks ``compute_g(shape, fn)`` would be streamed in under the current budget
    (for ``explain``-style inspection and tests)."""
    shape, target = split_target(shape, fn)
    entry = _entry(target, len(shape))
    values = entry.fetch(target)
    compiled = _compiled(entry, target, len(shape), values, dtype, config.compile_options())
    return _plan(compiled, shape, values, "gpu-sim" if config.gpu_simulator else "gpu", rows)


def _plan(
    compiled: _Compiled,
    shape: tuple[int, ...],
    values: Sequence[Any],
    backend_name: str,
    rows: int | None,
) -> Plan:
    wf = compiled.wf
    reads = ReadWindows(compiled.ir, _extents(wf, values))
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
        _host_arrays(values),
        dtypes,
        device_budget(backend_name),
        slots=SLOTS if gpu else 1,
        rate=rate,
        rows=rows,
    )


SLOTS = 3
"""Chunks in flight on the GPU: one being copied in, one computed, one copied back."""


def _stream_backend() -> Backend:
    if config.gpu_simulator:
        return backend_named("gpu-sim")
    return device_backend()


_DEVICE: dict[str, Backend] = {}


def device_backend() -> Backend:
    """A device-mode GPU backend (asynchronous launches on the current stream), whatever
    ``ol.config.memory`` says: the pipeline owns its buffers and streams."""
    backend = _DEVICE.get("device")
    if backend is None:
        from offload.ptx.backend import GPUBackend

        backend = GPUBackend(mode="device", cache_dir=config.cache_dir)
        _DEVICE["device"] = backend
    return backend


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
    backend = _stream_backend()
    entry = _entry(target, len(shape))
    values = entry.fetch(target)
    compiled = _compiled(entry, target, len(shape), values, dtype, options)
    wf = compiled.wf
    return Prepared(
        backend,
        _kernel(compiled, backend, options),
        wf,
        _plan(compiled, shape, values, backend.name, rows),
        values,
        _extents(wf, values),
        shape,
        tuple(t.dtype for t in wf.fn.result_types),
    )


def run(target: Any, shape: tuple[int, ...], dtype: Any = None, *, rows: int | None = None) -> Any:
    """Compute ``target`` (an element function or a delayed tree) over ``shape`` streamed.
    Returns host NumPy arrays (a tuple for several results)."""
    if not shape:
        raise OffloadError("streaming needs a result of rank >= 1 (it cuts the leading axis)")
    if 0 in shape:
        entry = _entry(target, len(shape))
        values = entry.fetch(target)
        options = config.compile_options()
        fn = _compiled(entry, target, len(shape), values, dtype, options).wf.fn
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
    entry = _entry(target, len(shape))
    values = entry.fetch(target)
    arrays: list[Any] = [values[k] for k in _host_arrays(values)]
    need: int = sum(int(a.nbytes) for a in arrays)
    need += math.prod(shape) * sum(t.dtype.itemsize for t in entry.lowered.ir.result_types)
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
