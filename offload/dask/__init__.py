"""Element functions over Dask arrays: ``offload.dask.compute`` gives a lazy ``dask.array``.

    import dask.array as da
    import offload.dask as old

    x = da.random.random((10_000, 10_000), chunks=2_500)
    y = old.compute(x.shape, lambda i, j: x[i, j] - x[i, j - 1] if j > 0 else 0.0, target="p")
    y.sum().compute()

Element ``[i, j]`` of the result is ``fn(i, j)``. ``fn`` may capture Dask arrays (by name:
a closure variable, or a global of ``fn``'s module read by ``fn`` or a helper there) as
well as NumPy/CuPy arrays and scalars. Each block of the result is one task: its kernel
sees global indices (the block's offset is a kernel argument) and reads each captured
array through its read window for that block, halo included, found from the IR's index
expressions as for streaming (``offload.stream.window``); a read the block does not bound
(``a[b[i]]``) gets the whole array. ``compute(node, ...)`` does the same for a delayed
tree, whose leaves (and the functions of whose nodes) may be Dask arrays too.

``target``: ``"s"`` (``compute_s``, one thread per task), ``"p"`` (``compute_p``) or
``"g"`` (``compute_g`` in device mode: CuPy chunks, as dask-cuda expects; the simulator,
with NumPy chunks, where ``ol.config.gpu_simulator`` is on). ``meta=``
is always given, so Dask never runs a kernel on an empty array. The IR travels to the
workers as its canonical text and each worker process compiles it once (the GPU's disk
cache serves later processes); every block reuses that kernel.

Collectives: ``compute(node)`` of a tree holding ``fold``, ``fold1``, ``fold_all``,
``fold_seg``, the scans (``_total`` and segmented forms too), ``stencil``, ``permute``,
``scatter`` or ``filter`` over Dask arrays rewrites it bottom-up (``schedule``): each
collective becomes Dask arrays computed block by block -- folds as combine trees fixed
by the chunking (``folds``), scans with block totals carried across the chunks
(``scans``), segmented ones on chunks cut at segment starts (``segments``), stencils on
blocks with halos (``stencils``), permutes as blocks' partials merged in a fixed tree
(``permutes``), filters block by block with chunks of unknown size (``filters``) -- and
the element nodes around them go through the element path above. Anything else is a
``DaskUnsupported`` error while the graph is built (docs/dask.md).

Reductions: ``fold_all`` (a Dask reduction with a fixed ``split_every`` combine tree) over
a ``BlockFold`` (``offload.stream.fold``): the extension point for the collectives' fold.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.acc.graph import needs_scheduler
from offload.backend import Backend, Kernel
from offload.config import config
from offload.dask.errors import DaskUnsupported
from offload.dask.runtime import backend_name, is_dask, meta
from offload.dask.schedule import compute_tree
from offload.dask.tasks import Key, Static, Tasks, window_arg
from offload.diagnostics import OffloadError
from offload.driver import specialise
from offload.frontend.nodes import ArrayNode
from offload.frontend.reader import make_fetcher
from offload.ir.parser import parse_function
from offload.ir.printer import print_function
from offload.lowering import check_and_lower
from offload.options import CompileOptions
from offload.stream import device_backend
from offload.stream.fold import SPLIT_EVERY, BlockFold, SequentialFold, fold_left
from offload.stream.window import (
    Block,
    GridWindows,
    ReadWindows,
    Window,
    WindowedFunction,
    windowed,
)
from offload.targets import backend_named, split_target

__all__ = [
    "SPLIT_EVERY",
    "BlockFold",
    "DaskUnsupported",
    "SequentialFold",
    "UnboundedRead",
    "compute",
    "fold_all",
]

_backend_name = backend_name
_is_dask = is_dask


def _stand_in(x: Any) -> np.ndarray[Any, Any]:
    """A NumPy array of ``x``'s dtype and shape over one element (zero strides): what the
    lowering sees for a Dask array (a kernel depends only on the kinds of its captures)."""
    return np.broadcast_to(np.zeros((), dtype=x.dtype), x.shape)


def _with_stand_ins(obj: Any) -> Any:
    """``obj`` (an element function or a delayed tree) with every Dask array it captures
    replaced by a NumPy stand-in, for lowering: by name in a function (closure cell or
    global), as a leaf or in a node's functions in a tree. The capture paths the lowering
    records lead, from the real ``obj``, to the real Dask arrays."""
    if isinstance(obj, types.FunctionType):
        return _function_with_stand_ins(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes: dict[str, Any] = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            new = _stand_in(value) if _is_dask(value) else _with_stand_ins(value)
            if new is not value:
                changes[f.name] = new
        return dataclasses.replace(obj, **changes) if changes else obj
    return obj


def _function_with_stand_ins(fn: types.FunctionType) -> types.FunctionType:
    """``fn`` over a copy of its module's globals in which every Dask array is a stand-in
    and every function of that module (a helper ``fn`` calls) is such a copy too; its
    closure cells holding Dask arrays replaced. ``fn`` itself if it reaches no Dask array
    that way."""
    glob = fn.__globals__
    if not any(_is_dask(v) for v in glob.values()):
        return _with_cells(fn, glob)
    copy: dict[str, Any] = dict(glob)
    for name, value in glob.items():
        if _is_dask(value):
            copy[name] = _stand_in(value)
        elif isinstance(value, types.FunctionType) and value.__globals__ is glob:
            copy[name] = _with_cells(value, copy, force=True)
    return _with_cells(fn, copy, force=True)


def _with_cells(
    fn: types.FunctionType, glob: dict[str, Any], *, force: bool = False
) -> types.FunctionType:
    """``fn`` with globals ``glob`` and stand-ins for the Dask arrays in its closure cells
    (``fn`` itself where nothing changes and ``force`` is off)."""
    cells = []
    changed = force
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell: lowering reports it if it is used
            cells.append(cell)
            continue
        if _is_dask(value):
            cells.append(types.CellType(_stand_in(value)))
            changed = True
        else:
            cells.append(cell)
    if not changed:
        return fn
    closure = tuple(cells) if fn.__closure__ is not None else None
    proxy = types.FunctionType(fn.__code__, glob, fn.__name__, fn.__defaults__, closure)
    proxy.__qualname__ = fn.__qualname__
    proxy.__module__ = fn.__module__
    proxy.__kwdefaults__ = fn.__kwdefaults__
    return proxy


@dataclass(frozen=True)
class BlockSpec:
    """What a worker needs to compute any block (pickled into the graph once per block):
    the windowed IR as text, the options, the backend, the scalar captures' values."""

    ir_text: str
    n_original: int
    arrays: tuple[int, ...]
    scalars: tuple[tuple[int, Any], ...]
    """Capture position -> value of every captured scalar."""
    extents: tuple[tuple[int, tuple[int, ...]], ...]
    """Capture position -> shape of every captured array (its whole extent)."""
    backend: str
    options: CompileOptions


_KERNELS: dict[tuple[str, str, CompileOptions], tuple[WindowedFunction, Kernel]] = {}
"""The kernels this process compiled for blocks (a cache: once per worker, not per task)."""
_KERNELS_LOCK = threading.Lock()


def _block_kernel(spec: BlockSpec) -> tuple[WindowedFunction, Kernel, Backend]:
    backend = device_backend() if spec.backend == "gpu-device" else backend_named(spec.backend)
    key = (spec.ir_text, spec.backend, spec.options)
    hit = _KERNELS.get(key)
    if hit is None:
        with _KERNELS_LOCK:
            hit = _KERNELS.get(key)
            if hit is None:
                fn = parse_function(spec.ir_text)
                wf = WindowedFunction(fn, spec.n_original, spec.arrays)
                hit = (wf, backend.compile(fn, spec.options))
                _KERNELS[key] = hit
    return hit[0], hit[1], backend


def _compute_block(spec: BlockSpec, block: Block, windows: dict[int, Window], *arrays: Any) -> Any:
    """One block of the result (runs on a worker): ``arrays`` are the captured arrays cut
    to ``windows``, in the order of ``spec.arrays``."""
    wf, kernel, backend = _block_kernel(spec)
    originals: list[Any] = [None] * spec.n_original
    for k, value in spec.scalars:
        originals[k] = value
    for k, array in zip(spec.arrays, arrays, strict=True):
        originals[k] = array
    shape = tuple(hi - lo for lo, hi in block)
    dtypes = [t.dtype for t in wf.fn.result_types]
    outs = backend.allocate(shape, dtypes)
    values = wf.values(originals, block, windows, dict(spec.extents))
    if 0 not in shape:
        kernel.launch(shape, outs, backend.prepare_captures(values))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _block_task(spec: BlockSpec, block: Static, windows: Static, *arrays: Any) -> tuple[Any, ...]:
    """``_compute_block`` as a task of the element graph: each component in a tuple."""
    out = _compute_block(spec, block.value, windows.value, *arrays)
    return out if isinstance(out, tuple) else (out,)


_meta = meta


WHOLE_BYTES = 256 << 20
"""The largest captured Dask array a block may read whole (a read the block does not
bound, ``a[b[i]]``); beyond it ``compute`` raises ``UnboundedRead``."""


class UnboundedRead(OffloadError):
    """A block reads a large captured Dask array at indices the block does not bound."""

    rule = "dask-unbounded-read"


def compute(
    shape: Any,
    fn: Any = None,
    *,
    target: str = "s",
    chunks: Any = None,
    dtype: Any = None,
    max_whole: int = WHOLE_BYTES,
    split_every: int = SPLIT_EVERY,
) -> Any:
    """A lazy ``dask.array`` whose element ``[i, j]`` is ``fn(i, j)`` (see the module
    docstring); a tuple of them for a function returning a tuple. ``chunks``: Dask's
    chunk specification for the result (default: the chunks of a captured Dask array of
    the result's shape, else ``"auto"``; a collective's result keeps the chunks it gets
    from its source unless ``chunks`` is given). ``dtype`` overrides the result dtype.
    ``max_whole``: the bytes of a captured Dask array a block may read whole where its
    reads are not bounded by the block (else ``UnboundedRead``, located at the read).
    ``split_every``: the partials each combine of a fold's tree folds."""
    if fn is None and isinstance(shape, ArrayNode) and needs_scheduler(shape):
        elements = functools.partial(_compute_elements, max_whole=max_whole)
        try:
            return compute_tree(
                shape, target, elements, chunks=chunks, dtype=dtype, split_every=split_every
            )
        except OffloadError as err:
            if config.debug:
                raise
            raise err.with_traceback(None) from None
    return _compute_elements(
        shape, fn, target=target, chunks=chunks, dtype=dtype, max_whole=max_whole
    )


def _compute_elements(
    shape: Any,
    fn: Any = None,
    *,
    target: str = "s",
    chunks: Any = None,
    dtype: Any = None,
    max_whole: int = WHOLE_BYTES,
) -> Any:
    """``compute`` of an element function or of a tree holding no collective."""
    import dask.array as da_module

    da: Any = da_module
    shape, node = split_target(shape, fn)
    rank = len(shape)
    if rank == 0:
        raise OffloadError("offload.dask.compute needs a result of rank >= 1")
    backend = _backend_name(target)
    options = config.compile_options()
    lowered = check_and_lower(_with_stand_ins(node), rank)
    values: list[Any] = make_fetcher(lowered.captures)(node)
    want = None
    if dtype is not None:
        n = len(lowered.ir.result_types)
        dts = dtype if isinstance(dtype, tuple | list) else (dtype,) * n
        want = tuple(np.dtype(d) for d in dts)
    ir = specialise(lowered, want, options)
    wf = windowed(ir)
    arrays = wf.arrays
    extents = {k: tuple(int(n) for n in values[k].shape) for k in arrays}
    reads = ReadWindows(ir, extents)
    spec = BlockSpec(
        print_function(wf.fn),
        wf.n_original,
        arrays,
        tuple((k, v) for k, v in enumerate(values) if k not in arrays),
        tuple(extents.items()),
        backend,
        options,
    )
    dtypes = [t.dtype for t in ir.result_types]
    sources = {
        k: values[k] if _is_dask(values[k]) else da.from_array(values[k], chunks=-1) for k in arrays
    }
    if chunks is None:
        same = [values[k] for k in arrays if _is_dask(values[k]) and values[k].shape == shape]
        chunks = same[0].chunks if same else "auto"
    chunks = da.core.normalize_chunks(chunks, shape, dtype=dtypes[0])
    starts = [np.concatenate([[0], np.cumsum(c)]).astype(int).tolist() for c in chunks]
    tasks = Tasks("elements", list(sources.values()))
    pieces: dict[tuple[int, ...], Key] = {}
    grid_windows = GridWindows(reads, starts)
    for index in np.ndindex(*(len(c) for c in chunks)):
        block = grid_windows.block(index)
        windows, unbounded = grid_windows.of(index)
        for u in unbounded:
            big = values[u.capture]
            if _is_dask(big) and big.nbytes > max_whole and big.numblocks[u.axis] > 1:
                raise UnboundedRead.at(
                    f"offload.dask: '{reads.names[u.capture]}' ({big.nbytes} bytes, "
                    f"{big.numblocks[u.axis]} chunks on axis {u.axis}) is read at indices a "
                    f"block does not bound, so every block would need all of it",
                    u.span,
                    hint="read it at offsets of the block's indices (a[i + 1], a[i, j - 1]), "
                    "rechunk it to one chunk on that axis, or raise max_whole=",
                )
        at = tuple(int(i) for i in index)
        cut_arrays = [window_arg(tasks, sources[k], windows[k], f"w{k}", at) for k in arrays]
        pieces[at] = tasks.add(
            "b", at, _block_task, spec, Static(block), Static(windows), *cut_arrays
        )
    metas = [_meta(backend, rank, dt) for dt in dtypes]
    results = tasks.arrays(pieces, chunks, metas)
    return results[0] if len(results) == 1 else tuple(results)


def fold_all(x: Any, fold: BlockFold, *, dtype: Any = None, split_every: int = SPLIT_EVERY) -> Any:
    """The fold of every element of the Dask array ``x`` as a lazy 0-d Dask array: each
    block's partial (``fold.partial``), then a fixed tree of ``split_every``-way combines
    in block order (``dask.array.reduction``), so the result does not depend on the
    scheduler or the workers."""
    import dask.array as da_module

    da: Any = da_module
    dt = np.dtype(dtype if dtype is not None else x.dtype)

    def chunk(block: Any, axis: Any, keepdims: bool) -> Any:
        del axis
        out = np.full((1,) * block.ndim, fold.partial(block), dtype=dt)
        return out if keepdims else out.reshape(())

    def combine(partials: Any, axis: Any, keepdims: bool) -> Any:
        del axis
        acc = fold_left(fold, np.asarray(partials).reshape(-1).tolist())
        out = np.full((1,) * partials.ndim, acc, dtype=dt)
        return out if keepdims else out.reshape(())

    return da.reduction(
        x,
        chunk,
        combine,
        combine=combine,
        split_every=split_every,
        dtype=dt,
        meta=np.empty((), dtype=dt),
        concatenate=True,
    )
