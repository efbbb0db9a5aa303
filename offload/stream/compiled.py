"""The lowerings and windowed kernels of streamed functions (a cache, as the driver's).

A streamed call is rare and large, so it does not use the driver's warm lane: it looks its
function up here by code object (or a delayed tree's structure), re-reads the captured
values, and reuses the windowed IR and kernels made for the same capture types.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.backend import Backend, Kernel
from offload.driver import specialise
from offload.frontend.lower import Lowered, capture_type_key
from offload.frontend.nodes import delayed_key
from offload.frontend.reader import Fetcher, make_fetcher, make_resolution_test
from offload.ir.core import Function
from offload.lowering import Typings, check_and_lower
from offload.options import CompileOptions
from offload.stream.window import WindowedFunction, windowed


@dataclass
class Compiled:
    """The windowed IR of one streamed function for one set of capture types."""

    wf: WindowedFunction
    ir: Function
    """The optimised IR the windowed one was made from (read windows are found in it)."""
    kernels: dict[str, Kernel]
    """Backend name -> the windowed kernel."""


@dataclass
class Entry:
    """A streamed function's lowering, capture reader and windowed kernels."""

    lowered: Lowered
    fetch: Fetcher
    valid: Callable[[Any], bool] | None
    """Whether the helpers built into the kernels are still what their names lead to."""
    compiled: dict[tuple[Any, ...], Compiled]
    typings: Typings
    """Its lowerings by capture types (``lowered`` is the first call's)."""


ENTRIES: dict[tuple[Any, ...], Entry] = {}
"""Lowerings and compiled windowed kernels of streamed functions (a cache)."""


def _key(target: Any, rank: int) -> tuple[Any, ...]:
    if isinstance(target, types.FunctionType):
        return (target.__code__, id(target.__globals__), rank)
    return (delayed_key(target), rank)


def entry(target: Any, rank: int) -> Entry:
    """The entry of ``target`` (a function or a delayed tree) at ``rank`` (lowered on a
    miss, or when a helper it was compiled with has been rebound)."""
    key = _key(target, rank)
    entry = ENTRIES.get(key)
    if entry is not None and entry.valid is not None and not entry.valid(target):
        entry = None
    if entry is None:
        lowered = check_and_lower(target, rank)
        fetch = make_fetcher(lowered.captures)
        entry = Entry(
            lowered,
            fetch,
            make_resolution_test(lowered.resolved),
            {},
            Typings(lowered, target, fetch),
        )
        ENTRIES[key] = entry
    return entry


def _wanted(dtype: Any, nresults: int) -> tuple[np.dtype[Any], ...] | None:
    if dtype is None:
        return None
    dts = dtype if isinstance(dtype, tuple | list) else (dtype,) * nresults
    if len(dts) != nresults:
        raise ValueError(f"dtype= names {len(dts)} dtype(s) but the function returns {nresults}")
    return tuple(np.dtype(d) for d in dts)


def compiled(  # noqa: PLR0917  (the call's facts)
    entry: Entry,
    target: Any,
    rank: int,
    values: Sequence[Any],
    dtype: Any,
    options: CompileOptions,
) -> Compiled:
    """The windowed IR for these capture types (with the optimised IR it came from)."""
    want = _wanted(dtype, len(entry.lowered.ir.result_types))
    ckey = (capture_type_key(values), want, options)
    hit = entry.compiled.get(ckey)
    if hit is None:
        lowered = entry.typings.of(target, rank, values)  # (typed for these values)
        ir = specialise(lowered, want, options)
        hit = Compiled(windowed(ir), ir, {})
        entry.compiled[ckey] = hit
    return hit


def kernel(compiled: Compiled, backend: Backend, options: CompileOptions) -> Kernel:
    """``compiled``'s kernel on ``backend`` (compiled on first use)."""
    kernel = compiled.kernels.get(backend.name)
    if kernel is None:
        kernel = backend.compile(compiled.wf.fn, options)
        compiled.kernels[backend.name] = kernel
    return kernel


def extents(wf: WindowedFunction, values: Sequence[Any]) -> dict[int, tuple[int, ...]]:
    """Capture position -> shape, for every captured array."""
    return {k: tuple(values[k].shape) for k in wf.arrays}


def host_arrays(values: Sequence[Any]) -> list[int]:
    """Positions of the captured host (NumPy) arrays: the ones a streamed call moves."""
    return [k for k, v in enumerate(values) if type(v) is np.ndarray and v.ndim > 0]
