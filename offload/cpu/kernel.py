"""A compiled CPU kernel (``CpuKernel``): its launch on one thread or on numba's threads,
first-call compiles, and bounds errors located in the element function.

``offload.cpu.backend`` builds one from the kernel source; this module runs it.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from offload.cpu.loopnest import CpuHooks, task_count, tiled
from offload.cpu.parallel import ForkGuard
from offload.cpu.threads import ThreadChoice, now
from offload.diagnostics import CompileError, KernelFault, OffloadError, UnsupportedSyntax
from offload.emit.recursion import compile_room, from_recursion, recursion_room
from offload.ir.core import Function
from offload.ir.types import ArrayType, ScalarType


class OutOfBoundsRead(KernelFault, IndexError):
    """A captured-array read outside the array, found with ``bounds_check=True``."""

    rule = "bounds"


class CpuKernel:
    """A compiled element function: ``launch`` fills the outputs for every index."""

    def __init__(self, fn: Function, dispatcher: Any, hooks: CpuHooks, source: str) -> None:
        self.fn = fn
        self.driver: Callable[[], Any] | None = None
        """``cpu-par``: the parallel driver (``offload.cpu.parallel``), built on first need."""
        self.fork_guard: ForkGuard | None = None
        """``cpu-par``: see ``ForkGuard``."""
        self.zero_d_captures: tuple[int, ...] = ()
        """``cpu-par``: the captures that are 0-d arrays, passed as 1-element views
        (numba's gufunc, the driver's ``prange`` body, takes a 0-d array for a scalar; the
        kernel reads either with ``.item()``)."""
        self._entries: dict[tuple[object, ...], int] = {}
        """``cpu-par``: the kernel's entry address per kernel (``kernel`` or the tiles') and
        argument types (numba's fingerprints of the arguments, as its dispatcher keys its
        own lookup)."""
        self.tiles: Callable[[], Any] | None = None
        """``cpu-par`` of rank >= 2: builds the dispatcher of the kernel of rows longer than
        a tile (``offload.cpu.loopnest.TILES_KERNEL``), on the first launch that needs it."""
        self._tiles: Any = None
        self.threads: ThreadChoice | None = None
        """``cpu-par``: one thread or all, per launch (``offload.cpu.threads``)."""
        self.dispatcher = dispatcher
        self.source = source
        self.sites = list(hooks.sites)
        self.err_size = hooks.err_size if hooks.bounds_check else 1
        self.checked = hooks.bounds_check
        self.scalar_types: list[ScalarType | None] = [
            c.type if isinstance(c.type, ScalarType) else None for c in fn.captures
        ]
        self._scalars = any(t is not None for t in self.scalar_types)
        self._no_err = np.zeros(self.err_size, np.int64)
        self._warmed: set[int] = set()
        """The dispatchers (``id``) that have compiled for a first launch."""
        self.loop_vectorize = True
        """False: compile without LLVM's loop vectoriser (``divides_under_a_branch``)."""

    def launch(self, shape: tuple[int, ...], outs: Sequence[Any], captures: Sequence[Any]) -> None:
        """Compute every element of ``shape`` into ``outs`` (one array per result)."""
        elements = math.prod(shape)
        if elements == 0:
            return
        choice = self.threads
        if choice is None or (len(shape) <= 1 and elements < 2):
            self._launch(shape, outs, captures, 1)  # (one task: nothing to choose)
            return
        # cpu-par: one thread or all, whichever measures faster (offload.cpu.threads); a
        # launch that compiled is not a measurement, and most launches on one thread are
        # not timed (the clock and the bookkeeping would cost them a few percent).
        threads = choice.pick(elements)
        if threads > 1 and self.fork_guard is not None:
            if self.fork_guard.in_forked_child():
                threads = 1
            else:
                self.fork_guard.launched()
        elif not choice.timed:
            self._launch(shape, outs, captures, threads)
            return
        warm = id(self._dispatcher_for(shape)) in self._warmed
        start = now()
        used = self._launch(shape, outs, captures, threads)
        if warm and used is not None:
            # under the mode picked, though fewer tasks than threads ran on fewer: recorded
            # under their count, all threads would never be measured and stay picked
            choice.record(elements, threads, now() - start)

    def _launch(
        self, shape: tuple[int, ...], outs: Sequence[Any], captures: Sequence[Any], threads: int
    ) -> int | None:
        """Run the kernel on up to ``threads`` threads (``cpu-par``); the number used, or
        ``None`` for a first parallel launch with these argument types (which may have
        compiled the driver, or started numba's threads: not a measurement)."""
        for o in outs:
            if type(o) is not np.ndarray:
                outs = [host_array(o) for o in outs]  # writes land in the caller's memory
                break
        if len(shape) == 0:
            outs = [o.reshape(1) for o in outs]
        if self._scalars:
            caps = [
                v if t is None else t.dtype.type(v)
                for v, t in zip(captures, self.scalar_types, strict=True)
            ]
        else:
            caps = list(captures)
        for k in self.zero_d_captures:
            caps[k] = caps[k].reshape(1)
        # (a kernel without bounds checks never writes err: one array serves every launch)
        err = np.zeros(self.err_size, np.int64) if self.checked else self._no_err
        args = (*shape, *outs, *caps, err)
        used: int | None = 1
        try:
            if self.driver is None:
                self._call(args, self.dispatcher)
            else:
                tasks = task_count(shape)
                dispatcher = self._dispatcher_for(shape)
                if threads > 1 and tasks > 1:
                    used = min(threads, tasks)
                    used = used if self._run_ranges(dispatcher, tasks, used, args) else None
                else:  # one thread: the kernel over all tasks here, no driver
                    self._call((0, tasks, *args), dispatcher)
        except IndexError as exc:  # numba's own boundscheck (e.g. an out= of the wrong shape)
            raise KernelFault.at(
                f"out-of-bounds access in the kernel of '{self.fn.name}': {exc}", self.fn.span
            ) from None
        if self.checked and err[0] != 0:
            raise self._bounds_error(err)
        return used

    def _dispatcher_for(self, shape: tuple[int, ...]) -> Any:
        """The dispatcher a launch over ``shape`` runs: ``kernel``'s, or (``cpu-par``, rows
        longer than a tile) the tiles kernel's, built on first need."""
        if self.tiles is None or not tiled(shape):
            return self.dispatcher
        if self._tiles is None:
            self._tiles = self.tiles()
        return self._tiles

    def _run_ranges(self, dispatcher: Any, tasks: int, ranges: int, args: tuple[Any, ...]) -> bool:
        """The kernel over ``ranges`` contiguous ranges of its tasks at once on numba's
        threads, by the parallel driver (``offload.cpu.parallel``); False where these
        argument types were new to it."""
        from numba._dispatcher import compute_fingerprint

        assert self.driver is not None
        try:
            key: tuple[object, ...] | None = (id(dispatcher), *map(compute_fingerprint, args))
        except (TypeError, ValueError, NotImplementedError):  # (no fingerprint: look each time)
            key = None
        entry = self._entries.get(key) if key is not None else None
        if entry is not None:
            self.driver()(entry, tasks, ranges, args)
            return True
        from numba.core.errors import NumbaWarning

        from offload.cpu.parallel import entry_address

        self._call((0, 0, *args), dispatcher)  # compiles the kernel for these types, if new
        types = tuple(dispatcher.typeof_pyval(a) for a in (0, 0, *args))
        entry = entry_address(dispatcher, types)
        if key is not None:
            self._entries[key] = entry
        with warnings.catch_warnings():  # the driver may compile for these types
            warnings.simplefilter("ignore", NumbaWarning)
            self.driver()(entry, tasks, ranges, args)
        return False

    def _call(self, args: tuple[Any, ...], dispatcher: Any) -> None:
        """``dispatcher(*args)``, compiling a specialisation where the types are new."""
        if id(dispatcher) not in self._warmed:
            self._first_call(args, dispatcher)
        elif self.loop_vectorize:
            try:
                dispatcher(*args)
            except RecursionError:  # compiling a new array layout's specialisation
                self._first_call(args, dispatcher)
        else:  # a new array layout compiles a new specialisation
            with self._room():
                without_loop_vectoriser(lambda: dispatcher(*args))

    def _first_call(self, args: tuple[Any, ...], dispatcher: Any) -> None:
        from numba.core.errors import NumbaError, NumbaWarning

        # numba compiles on first call; its performance hints are not the user's business
        # (and would be errors under ``-W error``).
        with warnings.catch_warnings(), self._room():
            warnings.simplefilter("ignore", NumbaWarning)
            try:
                if self.loop_vectorize:
                    dispatcher(*args)
                else:
                    without_loop_vectoriser(lambda: dispatcher(*args))
            except NumbaError as exc:
                if from_recursion(exc):
                    raise self._too_large() from None
                raise CompileError.at(
                    f"numba could not compile the kernel for '{self.fn.name}': "
                    f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                    self.fn.span,
                    hint="this is a bug in offload; please report it with ol.explain output",
                ) from None
        self._warmed.add(id(dispatcher))

    @contextlib.contextmanager
    def _room(self) -> Iterator[None]:
        """Recursion room for numba's compile of this kernel (it recurses along the
        kernel's blocks); a compile that still runs out is a located error about the
        function's size, not an internal one."""
        try:
            with recursion_room(compile_room(self.source)):
                yield
        except RecursionError:
            raise self._too_large() from None

    def _too_large(self) -> OffloadError:
        return UnsupportedSyntax.at(
            f"'{self.fn.name}' is too large for numba to compile (its compile recursed past "
            "Python's recursion limit)",
            self.fn.span,
            hint="make the function smaller: a captured lookup array or arithmetic instead "
            "of long if/elif chains, a loop instead of repeated statements",
        )

    def _bounds_error(self, err: Any) -> OutOfBoundsRead:
        site = int(err[0]) - 1
        cap_index, span = self.sites[site]
        n = self.fn.n_index
        elem = tuple(int(x) for x in err[1 : 1 + n])
        where = f"element function '{self.fn.name}' at element index {elem}"
        if cap_index < 0:  # a local array of rank -cap_index (CpuHooks.local_bounds_fail)
            idx = tuple(int(x) for x in err[1 + n : 1 + n - cap_index])
            message = f"out-of-bounds index [{', '.join(map(str, idx))}] into a local array in"
            hint = "check the index arithmetic against the array's length"
        else:
            cap = self.fn.captures[cap_index]
            ndim = cap.type.ndim if isinstance(cap.type, ArrayType) else 0
            idx = tuple(int(x) for x in err[1 + n : 1 + n + ndim])
            message = f"out-of-bounds read {cap.name}[{', '.join(map(str, idx))}] in"
            hint = "check the index arithmetic, or clamp the index"
        error = OutOfBoundsRead.at(
            f"{message} {where}", span if span is not None else self.fn.span, hint=hint
        )
        assert isinstance(error, OutOfBoundsRead)
        return error


def without_loop_vectoriser(call: Callable[[], object]) -> None:
    """``call()`` (a dispatcher's call, which compiles a specialisation when the argument
    types are new) with numba's loop vectorisation off. numba reads the setting when it
    optimises each library and compiles under its global lock, so holding the lock keeps
    other threads' compiles unaffected (and runs these rare kernels one at a time)."""
    from numba.core import config
    from numba.core.compiler_lock import global_compiler_lock

    with global_compiler_lock:
        old = getattr(config, "LOOP_VECTORIZE")  # noqa: B009 (set at run time: no stub has it)
        setattr(config, "LOOP_VECTORIZE", False)  # noqa: B010
        try:
            call()
        finally:
            setattr(config, "LOOP_VECTORIZE", old)  # noqa: B010


_INTERFACES = ("__array_interface__", "__dlpack__", "__cuda_array_interface__")


def foreign_array(c: Any) -> bool:
    """An array that is not a NumPy array (NumPy scalars have ``__array_interface__`` too)."""
    t = type(c)
    if t is np.ndarray or t is int or t is float or t is bool or isinstance(c, np.generic):
        return False
    return isinstance(c, np.ndarray) is False and any(hasattr(c, n) for n in _INTERFACES)


def host_array(x: Any) -> np.ndarray[Any, Any]:
    """A NumPy view of the host array ``x`` (``__array_interface__`` or DLPack), no copy;
    ``TypeError`` for an array in GPU memory."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__array_interface__"):
        return np.asarray(x)
    if hasattr(x, "__cuda_array_interface__"):
        raise TypeError(
            f"a {type(x).__module__}.{type(x).__qualname__} in GPU memory was given to a CPU "
            "target (compute_s/compute_p read host memory): copy it to the host first, or "
            "use compute_g"
        )
    try:
        return np.from_dlpack(x)
    except (BufferError, RuntimeError) as err:  # not host memory
        raise TypeError(
            f"a {type(x).__module__}.{type(x).__qualname__} given to a CPU target is not in "
            f"host memory ({err}): copy it to the host first, or use compute_g"
        ) from None
