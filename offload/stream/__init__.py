"""Streaming on one GPU: ``compute_g`` over host inputs larger than the device memory budget.

    import offload as ol
    ol.config.device_memory_limit = 2 << 30        # bytes; default: the GPU's free memory
    y = ol.compute_g(n, lambda i: x[i - 1] + x[i] + x[i + 1] if 0 < i < n - 1 else x[i])
    y = ol.stream.compute_g(n, f)                   # always streamed (chunks of rows)
    s = ol.compute_g(ol.fold_all(add, 0.0, ol.map(g, x)))   # a streamed fold

The result is computed in chunks of rows (``offload.stream.plan``); each chunk's kernel sees
global indices and each captured host array is cut to the chunk's read window, halo
included, found from the IR's index expressions (``offload.stream.window``). A captured
array whose reads the chunk does not bound (``a[b[i]]``, a loop over a whole axis) is copied
once whole if it fits, else a ``DoesNotFit`` error points at its read. Results are host
NumPy arrays, equal bit for bit to the unstreamed ones.

``fold``/``fold_all`` of an element tree over host arrays stream too: each chunk is
reduced on the device, into the partials of the unstreamed reduction tree, with the same
bits (``offload.stream.collectives``); so do the scans (``offload.stream.scans``: a
vector's through the unstreamed reduce-then-scan tree, in two passes), ``permute``,
``scatter`` and ``filter`` (``offload.stream.reorder``), and ``stencil``
(``offload.stream.stencils``: an element function with a halo). A sequence of arrays -- a file
read a block at a time -- is folded by ``fold_seq`` (``offload.stream.sequence``). Other
trees holding collectives are not streamed (``StreamUnsupported`` where they exceed the
limit; ``offload.stream.trees`` says which is which).

``compute_g`` streams by itself (``maybe_stream``, ``compute_tree``) where
``ol.config.device_memory_limit`` is set and the inputs and results exceed it, and where
the unstreamed call is refused with ``MemoryError`` (more than the GPU has free). An
element call's ``out=`` may be host NumPy arrays: the chunks' results are written into
them (no fresh result: a result written before is not first touched again, and a
page-locked one is written by the DMA engine itself); a tree's result is copied into them
(``offload.stream.tree_out``). Captured host arrays in page-locked
memory are read by the DMA engine in place, not staged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from offload.acc.base import Context
from offload.acc.graph import needs_scheduler
from offload.config import config
from offload.delayed import Delayed
from offload.diagnostics import OffloadError
from offload.runtime.staging import PINNED
from offload.stream import compiled as cache
from offload.stream import composite, tree_out, trees
from offload.stream.calls import Prepared, execute, host_out, plan_of, prepare, run
from offload.stream.collectives import StreamUnsupported, host_bytes
from offload.stream.device import device_backend, device_budget, stream_backend_name
from offload.stream.fold import SPLIT_EVERY, BlockFold, SequentialFold, combine_tree
from offload.stream.plan import DoesNotFit, Plan
from offload.stream.sequence import fold_seq
from offload.targets import split_target

__all__ = [
    "BlockFold",
    "DoesNotFit",
    "Prepared",
    "SequentialFold",
    "StreamUnsupported",
    "compute_g",
    "compute_tree",
    "device_backend",
    "device_budget",
    "fold_all",
    "fold_seq",
    "host_out",
    "maybe_stream",
    "plan",
    "prepare",
    "release",
    "run",
]


def plan(shape: Any, fn: Any = None, *, dtype: Any = None, rows: int | None = None) -> Plan:
    """The chunks ``compute_g(shape, fn)`` would be streamed in under the current budget
    (for ``explain``-style inspection and tests); for a fold (``ol.fold``/``ol.fold_all``
    tree, a scan, a permute or a filter), the chunks of its source
    (``offload.stream.trees``)."""
    if fn is None and needs_scheduler(shape):
        return trees.plan(shape, rows)
    shape, target = split_target(shape, fn)
    found = cache.entry(target, len(shape))
    values = found.fetch(target)
    made = cache.compiled(found, target, len(shape), values, dtype, config.compile_options())
    return plan_of(made, shape, values, stream_backend_name(), rows=rows)


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
    partials = execute(p, lambda _, results: fold.partial(results[0]))
    return combine_tree(fold, partials, split_every)


def release() -> None:
    """Free the pinned host buffers streamed GPU runs keep for later runs."""
    PINNED.release()


def compute_g(
    shape: Any, fn: Any = None, *, dtype: Any = None, rows: int | None = None, out: Any = None
) -> Any:
    """``ol.compute_g`` always streamed: the result in chunks of rows (``rows`` per chunk,
    else the largest that fits the budget; see the module docstring). Returns host NumPy
    arrays equal bit for bit to ``ol.compute_g``'s (``out``, host NumPy arrays of an
    element call's result: written into them; a tree's result: copied into them,
    ``offload.stream.tree_out``). A ``fold``/``fold_all``, scan, permute, filter or
    stencil tree streams its source (``rows``: rows of the source per chunk, rounded up
    to what its tree allows); other trees holding collectives stream part by part
    (``offload.stream.composite``) or raise ``StreamUnsupported``."""
    try:
        if out is not None and not host_out(out):
            raise TypeError("a streamed call's out= takes host NumPy arrays")
        if fn is None and needs_scheduler(shape):
            if out is not None:
                tree_out.check(shape, dtype, out)
            st = trees.covered(shape)
            if st is None:  # (several streamed parts, or work after one)
                made = composite.run(shape, dtype, limit=None, rows=rows)
            else:
                made = trees.run(st, dtype, rows)
            return made if out is None else tree_out.write(out, made)
        shape, target = split_target(shape, fn)
        return run(target, shape, dtype, rows=rows, out=out)
    except OffloadError as err:
        if config.debug:
            raise
        raise err.with_traceback(None) from None


def maybe_stream(shape_or_delayed: Any, fn: Any, dtype: Any, out: Any = None) -> Any:
    """The hook ``ol.compute_g`` calls where ``ol.config.device_memory_limit`` is set: the
    streamed result where the call's captured host arrays and results exceed the limit,
    else ``None`` (the call runs unstreamed). ``out``: host NumPy arrays the streamed
    result is written into (a tree's result is copied into them)."""
    limit = config.device_memory_limit
    if limit is None:
        return None
    if fn is None and needs_scheduler(shape_or_delayed):
        if out is not None:
            tree_out.check(shape_or_delayed, dtype, out)
        st = trees.covered(shape_or_delayed)
        if st is not None:
            made = trees.maybe_stream(st, dtype, limit)
        elif host_bytes(shape_or_delayed) <= limit:
            made = None
        else:
            made = composite.run(shape_or_delayed, dtype, limit=limit)  # (part by part)
        return made if made is None or out is None else tree_out.write(out, made)
    shape, target = split_target(shape_or_delayed, fn)
    if not shape:
        return None
    found = cache.entry(target, len(shape))
    values = found.fetch(target)
    arrays: list[Any] = [values[k] for k in cache.host_arrays(values)]
    need: int = sum(int(a.nbytes) for a in arrays)
    typed = found.typings.of(target, len(shape), values)  # (the result types of these values)
    need += int(np.prod(shape, dtype=np.int64)) * sum(
        t.dtype.itemsize for t in typed.ir.result_types
    )
    if need <= limit:
        return None
    return run(target, shape, dtype, out=out)


def stream_on_memory_error(shape_or_delayed: Any, fn: Any, dtype: Any, out: Any = None) -> Any:
    """``ol.compute_g``'s second try after the unstreamed call was refused with
    ``MemoryError``: the streamed result (the budget is the GPU's free memory; written
    into ``out``, host NumPy arrays, where given), or ``None`` where the call cannot be
    streamed."""
    if fn is None and needs_scheduler(shape_or_delayed):
        st = trees.covered(shape_or_delayed)
        if st is not None:
            made = trees.run(st, dtype)
        else:
            try:
                budget = device_budget(stream_backend_name())
                made = composite.run(shape_or_delayed, dtype, limit=budget)
            except StreamUnsupported:
                return None
        return made if out is None else tree_out.write(out, made)
    shape, target = split_target(shape_or_delayed, fn)
    if not shape:
        return None
    return run(target, shape, dtype, out=out)


def compute_tree(
    ctx: Context,
    root: Delayed,
    dtype: Any,
    unstreamed: Callable[[Context, Any, Any, Any], Any],
    out: Any = None,
) -> Any:
    """``ol.compute_g(root, dtype=dtype, out=out)`` of a tree holding collectives
    (``ctx``: the call's; ``out``: ``None`` or host NumPy arrays): streamed as
    ``maybe_stream`` and ``stream_on_memory_error`` decide, else ``unstreamed(ctx, root,
    dtype, out)`` (the graph scheduler's path)."""
    if config.device_memory_limit is not None:
        streamed = maybe_stream(root, None, dtype, out)
        if streamed is not None:
            return streamed
    try:
        return unstreamed(ctx, root, dtype, out)
    except MemoryError:
        streamed = stream_on_memory_error(root, None, dtype, out)
        if streamed is None:
            raise
        return streamed
