"""The public API: ``compute_s``, ``compute_p``, ``compute_g``, ``explain``, ``use``."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from types import FunctionType
from typing import Any

from offload import driver
from offload.backend import Backend
from offload.config import config
from offload.diagnostics import CompileError, OffloadError
from offload.options import CompileOptions

Shape = int | tuple[int, ...]


def _normalise_shape(shape: Any) -> tuple[int, ...]:
    items = shape if isinstance(shape, tuple | list) else (shape,)
    dims: list[int] = []
    for n in items:
        if isinstance(n, bool):
            raise TypeError(f"shape entries must be ints, got {n!r} in {shape!r}")
        try:
            d = operator.index(n)
        except TypeError:
            raise TypeError(f"shape must be an int or a tuple of ints, got {shape!r}") from None
        if d < 0:
            raise ValueError(f"shape entries must be >= 0, got {shape!r}")
        dims.append(d)
    return tuple(dims)


def _split_target(shape_or_delayed: Any, fn: Any) -> tuple[tuple[int, ...], Any]:
    # Fast lane for the usual call, an int or a tuple of plain non-negative ints and a
    # callable: no import, no list; anything else takes the checking path below.
    t = type(shape_or_delayed)
    if fn is not None and callable(fn):
        if t is int:
            if shape_or_delayed >= 0:
                return (shape_or_delayed,), fn
        elif t is tuple:
            for n in shape_or_delayed:
                if type(n) is not int or n < 0:
                    break
            else:
                return shape_or_delayed, fn
    from offload.delayed import Delayed

    if isinstance(shape_or_delayed, Delayed):
        if fn is not None:
            raise TypeError("compute_*(delayed) takes no element function")
        return tuple(shape_or_delayed.shape), shape_or_delayed
    if fn is None:
        raise TypeError("compute_*(shape, fn): the element function is missing")
    if not callable(fn):
        raise TypeError(f"the element function must be callable, got {type(fn).__name__}")
    return _normalise_shape(shape_or_delayed), fn


@functools.cache
def _backend(name: str) -> Backend:
    if name == "cpu-seq":
        from offload.cpu.backend import CPU_SEQ

        return CPU_SEQ
    if name == "cpu-par":
        from offload.cpu.backend import CPU_PAR

        return CPU_PAR
    from offload.ptx.backend import GPUBackend

    simulator = name == "gpu-sim"
    return GPUBackend(mode=config.memory, cache_dir=config.cache_dir, simulator=simulator)


def _gpu_name() -> str:
    return "gpu-sim" if config.gpu_simulator else f"gpu-{config.memory}"


class _Target:
    """The backend of one ``compute_*``, resolved once per configuration.

    ``config`` drops its cached ``CompileOptions`` whenever a field is assigned, so the
    identity of ``config.compile_options()`` stamps the configuration: while it is the
    stamp held here (held, so its id cannot be reused), no field changed and the backend
    found for it still stands. The pair is one tuple, replaced whole."""

    __slots__ = ("name", "state")

    def __init__(self, name: Callable[[], str]) -> None:
        self.name = name
        self.state: tuple[CompileOptions | None, Any] = (None, None)

    def resolve(self, options: CompileOptions) -> Backend:
        """The backend for ``options``' configuration (remembered until it changes)."""
        backend = _backend(self.name())
        self.state = (options, backend)
        return backend


_SEQ = _Target(lambda: "cpu-seq")
_PAR = _Target(lambda: "cpu-par")
_GPU = _Target(_gpu_name)


def _call(target: _Target, shape_or_delayed: Any, fn: Any, dtype: Any, out: Any) -> Any:
    """One ``compute_*`` call; errors leave it with their frames (see ``_user_error``)."""
    options = config.compile_options()
    stamp, backend = target.state
    if stamp is not options:
        backend = target.resolve(options)
    if type(shape_or_delayed) is int and shape_or_delayed >= 0 and type(fn) is FunctionType:
        return driver.run(backend, fn, (shape_or_delayed,), dtype, out, options)
    shape, fn = _split_target(shape_or_delayed, fn)
    return driver.run(backend, fn, shape, dtype, out, options)


def _compute(target: _Target, shape: Any, fn: Any, dtype: Any, out: Any) -> Any:
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
    return _compute(_SEQ, shape, fn, dtype, out)


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
    arrays) and returns it. The work is split over the outermost dimension (tiles of the
    last axis for rank >= 2) with numba's ``prange``; the values equal ``compute_s``'s.

    Raises an ``OffloadError`` subclass with ``file:line:col``, the source line, a caret
    and a hint for every construct the language rejects (recursion, allocation, writes to
    captured arrays, unsupported syntax or calls), all reported together; ``TypeError`` /
    ``ValueError`` for bad shapes, dtypes and ``out=`` arrays. Compiled kernels are cached:
    a warm call re-reads the captured values and launches, without parsing again.
    """
    return _compute(_PAR, shape, fn, dtype, out)


def compute_g(shape: Any, fn: Any = None, *, dtype: Any = None, out: Any = None) -> Any:
    """Like ``compute_s`` but on the GPU; the same values as ``compute_s``.

    In the default ``unified`` memory mode (``ol.config.memory``) the result is a NumPy
    array over CUDA managed memory that the next ``compute_g`` reads without a copy; in
    ``device`` mode it is a device array (CuPy, with ``__cuda_array_interface__`` and
    DLPack). Raises ``GPUUnavailable`` where there is no GPU (use ``compute_p``, or set
    ``NUMBA_ENABLE_CUDASIM=1`` for numba's simulator).
    """
    return _compute(_GPU, shape, fn, dtype, out)
