"""The public entry points ``compute_s``, ``compute_p`` and ``compute_g``, and their typed
signatures (``explain`` lives in ``offload.explain``, ``use`` in ``offload/__init__``)."""

from __future__ import annotations

from collections.abc import Callable
from types import FunctionType
from typing import Any, SupportsIndex, TypeAlias, TypeVar, overload

import numpy as np
from numpy.typing import DTypeLike, NDArray

from offload import driver, replay, stream
from offload.acc.base import Context
from offload.acc.graph import needs_scheduler
from offload.config import config
from offload.delayed import Delayed
from offload.diagnostics import CompileError, OffloadError
from offload.targets import GPU, PAR, SEQ, Target, check_out, inner_backend, split_target

# The public signatures. An element function's result picks the overload: a number (a
# Python or NumPy scalar) gives one array, a tuple of numbers a tuple of arrays; a function
# whose result type is unknown (unannotated, `Any`) matches both, so a type checker sees
# `Any`, as it does for a delayed array (its type does not say how many results it has).
# `out=` is returned as it is, so its own type comes back.

Shape: TypeAlias = SupportsIndex | tuple[SupportsIndex, ...] | list[SupportsIndex]
"""An int or a tuple (or list) of ints: the index space of a ``compute_*`` call."""

DTypes: TypeAlias = DTypeLike | tuple[DTypeLike, ...] | list[DTypeLike] | None
"""``dtype=``: one dtype, or one per result of a tuple-valued function (``None``: the
function's own)."""

Number: TypeAlias = float | np.generic
"""What an element function returns (or a tuple of): a Python number (``int`` and ``bool``
are ``float`` to a type checker) or a NumPy scalar."""

GpuArray: TypeAlias = Any
"""What ``compute_g`` returns for each result: a ``numpy.ndarray`` over CUDA managed memory
in the default ``unified`` memory mode, a ``cupy.ndarray`` in ``device`` mode. The mode is a
run-time setting (``ol.config.memory``) and CuPy is optional, so the static type is ``Any``."""

_Out = TypeVar("_Out")


def _call(target: Target, shape_or_delayed: Any, fn: Any, dtype: Any, out: Any) -> Any:
    """One ``compute_*`` call; errors leave it with their frames (see ``_user_error``)."""
    options = config.compile_options()
    if out is not None:
        check_out(out)
    elif fn is None and dtype is None and (target is not GPU or config.device_memory_limit is None):
        stamp, backend = target.state
        if stamp is options:  # (the configuration unchanged since ``backend`` was found)
            try:
                done = replay.rerun(shape_or_delayed, backend, options, config.determinism)
            except MemoryError:  # (the full path streams where it can)
                done = replay.MISS
            if done is not replay.MISS:
                return done
    if fn is None and needs_scheduler(shape_or_delayed):
        # A tree holding collectives (or shared work): computed stage by stage.
        ctx = _context(target, options)
        if target is GPU and (out is None or stream.host_out(out)):
            # (streamed where its host inputs are too large)
            return stream.compute_tree(ctx, shape_or_delayed, dtype, replay.compute, out)
        return replay.compute(ctx, shape_or_delayed, dtype, out)
    stamp, backend = target.state
    if stamp is not options:
        backend = target.resolve(options)
    if target is GPU and (out is None or stream.host_out(out)):
        return _gpu_call(backend, shape_or_delayed, fn, dtype, options, out)
    if type(shape_or_delayed) is int and shape_or_delayed >= 0 and type(fn) is FunctionType:
        return driver.run(backend, fn, (shape_or_delayed,), dtype, out, options)
    shape, fn = split_target(shape_or_delayed, fn)
    return driver.run(backend, fn, shape, dtype, out, options)


def _context(target: Target, options: Any) -> Context:
    """The collectives' context of a call on ``target`` with ``options``: the last one
    while the configuration is unchanged (the options object is its stamp)."""
    stamp, backend = target.state
    if stamp is not options:
        backend = target.resolve(options)
    ctx: Context | None = target.context
    if (
        ctx is None
        or ctx.backend is not backend
        or ctx.options is not options
        or ctx.determinism != config.determinism
    ):
        inner = inner_backend(backend)
        ctx = Context(backend, options, config.determinism, run=driver.run, inner=inner)
        target.context = ctx
    return ctx


def _gpu_call(  # noqa: PLR0917  (the call's arguments)
    backend: Any, shape_or_delayed: Any, fn: Any, dtype: Any, options: Any, out: Any = None
) -> Any:
    """A ``compute_g`` call without ``out=`` or with host NumPy arrays as ``out=``: streamed
    in chunks (``offload.stream``) where ``ol.config.device_memory_limit`` is set and
    exceeded, or where the GPU refuses the unstreamed call with ``MemoryError``."""
    if config.device_memory_limit is not None:
        streamed = stream.maybe_stream(shape_or_delayed, fn, dtype, out)
        if streamed is not None:
            return streamed
    try:
        if type(shape_or_delayed) is int and shape_or_delayed >= 0 and type(fn) is FunctionType:
            return driver.run(backend, fn, (shape_or_delayed,), dtype, out, options)
        shape, target = split_target(shape_or_delayed, fn)
        return driver.run(backend, target, shape, dtype, out, options)
    except MemoryError:
        streamed = stream.stream_on_memory_error(shape_or_delayed, fn, dtype, out)
        if streamed is None:
            raise
        return streamed


def _compute(target: Target, shape: Any, fn: Any, dtype: Any, out: Any) -> Any:
    """``_call`` with the errors a user sees: ``TypeError``, ``ValueError``, ``MemoryError``
    and ``IndexError`` as they are, anything else through ``_user_error``."""
    try:
        return _call(target, shape, fn, dtype, out)
    except (TypeError, ValueError, MemoryError, IndexError):
        raise
    except Exception as err:
        if config.debug:
            raise
        raise _user_error(err, shape if fn is None else fn) from None


def _user_error(err: Exception, target: Any) -> Exception:
    """What a ``compute_*`` raises for ``err`` (not a ``TypeError``, ``ValueError``,
    ``MemoryError`` or ``IndexError``, which are raised as they are): an ``OffloadError``
    without offload's frames, or an internal error as a ``CompileError`` saying so."""
    if isinstance(err, OffloadError):
        return err.with_traceback(None)
    return CompileError(
        f"internal error in offload while compiling or running "
        f"{getattr(target, '__qualname__', type(target).__name__)}: "
        f"{type(err).__name__}: {err}\nhint: this is a bug in offload; set "
        f"OFFLOAD_DEBUG=1 (ol.config.debug = True) for the full traceback and report it"
    )


@overload
def compute_s(
    shape: int, fn: Callable[[int], Number], *, dtype: DTypes = None, out: None = None
) -> NDArray[Any]: ...
@overload
def compute_s(
    shape: int, fn: Callable[[int], tuple[Number, ...]], *, dtype: DTypes = None, out: None = None
) -> tuple[NDArray[Any], ...]: ...
@overload
def compute_s(
    shape: Shape, fn: Callable[..., Number], *, dtype: DTypes = None, out: None = None
) -> NDArray[Any]: ...
@overload
def compute_s(
    shape: Shape,
    fn: Callable[..., tuple[Number, ...]],
    *,
    dtype: DTypes = None,
    out: None = None,
) -> tuple[NDArray[Any], ...]: ...
@overload
def compute_s(
    shape: Delayed, fn: None = None, *, dtype: DTypes = None, out: None = None
) -> Any: ...
@overload
def compute_s(
    shape: Shape | Delayed,
    fn: Callable[..., object] | None = None,
    *,
    dtype: DTypes = None,
    out: _Out,
) -> _Out: ...


def compute_s(shape: Any, fn: Any = None, *, dtype: Any = None, out: Any = None) -> Any:
    """Compute ``fn`` at every index of ``shape`` on one CPU thread.

    ``compute_s(shape, fn)``: ``shape`` is an int or a tuple of ints; ``fn`` takes one int
    per dimension and returns a scalar (an array of that dtype comes back) or a tuple of
    scalars (a tuple of arrays comes back: struct of arrays). ``compute_s(delayed)``
    computes a delayed array (``ol.map``, ``ol.from_function``...) in one loop nest.

    ``dtype=`` overrides the inferred result dtype (NumPy 2 promotion rules: a Python
    float times a float32 array element stays float32). ``out=`` writes into an existing
    array (or tuple of arrays) and returns it.

    Raises an ``OffloadError`` with the file, line and column of every construct the
    language does not accept (recursion, allocation, writes to captured arrays, ...).
    """
    return _compute(SEQ, shape, fn, dtype, out)


@overload
def compute_p(
    shape: int, fn: Callable[[int], Number], *, dtype: DTypes = None, out: None = None
) -> NDArray[Any]: ...
@overload
def compute_p(
    shape: int, fn: Callable[[int], tuple[Number, ...]], *, dtype: DTypes = None, out: None = None
) -> tuple[NDArray[Any], ...]: ...
@overload
def compute_p(
    shape: Shape, fn: Callable[..., Number], *, dtype: DTypes = None, out: None = None
) -> NDArray[Any]: ...
@overload
def compute_p(
    shape: Shape,
    fn: Callable[..., tuple[Number, ...]],
    *,
    dtype: DTypes = None,
    out: None = None,
) -> tuple[NDArray[Any], ...]: ...
@overload
def compute_p(
    shape: Delayed, fn: None = None, *, dtype: DTypes = None, out: None = None
) -> Any: ...
@overload
def compute_p(
    shape: Shape | Delayed,
    fn: Callable[..., object] | None = None,
    *,
    dtype: DTypes = None,
    out: _Out,
) -> _Out: ...


def compute_p(shape: Any, fn: Any = None, *, dtype: Any = None, out: Any = None) -> Any:
    """Compute ``fn`` at every index of ``shape`` on all CPU cores.

    ``compute_p(shape, fn)``: ``shape`` is an int or a tuple of ints; ``fn`` is a plain
    Python function (or lambda) taking one int per dimension and returning a number (an
    array of that dtype comes back) or a tuple of numbers (a tuple of arrays: struct of
    arrays). It may read captured NumPy arrays (``a[i, j]``, negative indices, ``a.shape``)
    and captured scalars, use ``if``/``for range``/``while``, ``math.*`` and NumPy scalar
    functions, and call other plain functions (inlined). ``compute_p(delayed)`` computes a
    delayed array (``ol.map``, ``ol.from_function``, ...) fused into one loop nest.

    ``dtype=`` overrides the inferred result dtype (NumPy 2 promotion: a Python float times
    a float32 element stays float32); ``out=`` writes into an existing array (or tuple of
    arrays) and returns it. The work is split into contiguous ranges of elements (tiles
    of the last axis for rank >= 2), one per numba thread, or runs on one thread where
    that measures faster; the values equal ``compute_s``'s.

    Raises an ``OffloadError`` subclass with ``file:line:col``, the source line, a caret
    and a hint for every construct the language rejects (recursion, allocation, writes to
    captured arrays, unsupported syntax or calls), all reported together; ``TypeError`` /
    ``ValueError`` for bad shapes, dtypes and ``out=`` arrays. Compiled kernels are cached:
    a warm call re-reads the captured values and launches, without parsing again.
    """
    return _compute(PAR, shape, fn, dtype, out)


@overload
def compute_g(
    shape: int, fn: Callable[[int], Number], *, dtype: DTypes = None, out: None = None
) -> GpuArray: ...
@overload
def compute_g(
    shape: int, fn: Callable[[int], tuple[Number, ...]], *, dtype: DTypes = None, out: None = None
) -> tuple[GpuArray, ...]: ...
@overload
def compute_g(
    shape: Shape, fn: Callable[..., Number], *, dtype: DTypes = None, out: None = None
) -> GpuArray: ...
@overload
def compute_g(
    shape: Shape,
    fn: Callable[..., tuple[Number, ...]],
    *,
    dtype: DTypes = None,
    out: None = None,
) -> tuple[GpuArray, ...]: ...
@overload
def compute_g(
    shape: Delayed, fn: None = None, *, dtype: DTypes = None, out: None = None
) -> Any: ...
@overload
def compute_g(
    shape: Shape | Delayed,
    fn: Callable[..., object] | None = None,
    *,
    dtype: DTypes = None,
    out: _Out,
) -> _Out: ...


def compute_g(shape: Any, fn: Any = None, *, dtype: Any = None, out: Any = None) -> Any:
    """Like ``compute_s`` but on the GPU; the same values as ``compute_s``.

    In the default ``unified`` memory mode (``ol.config.memory``) the result is a NumPy
    array over CUDA managed memory that the next ``compute_g`` reads without a copy; in
    ``device`` mode it is a device array (CuPy, with ``__cuda_array_interface__`` and
    DLPack). Raises ``GPUUnavailable`` where there is no GPU (use ``compute_p``, or set
    ``NUMBA_ENABLE_CUDASIM=1`` for numba's simulator).
    """
    return _compute(GPU, shape, fn, dtype, out)
