"""The CPU backends ``cpu-seq`` (one thread, ``numba.njit``) and ``cpu-par`` (``prange``).

``compile`` emits the kernel source (``offload.cpu.loopnest``), executes it and wraps the
function in a numba dispatcher; numba specialises it per array layout (C, F, any-strided)
on first use. Compiled kernels are cached in-process on the printed IR and the options.
"""

from __future__ import annotations

import hashlib
import linecache
import os
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from offload.backend import Launcher, Pinned
from offload.cpu.loopnest import CpuHooks, kernel_function
from offload.cpu.symbols import ensure_int128_helpers
from offload.diagnostics import CompileError, KernelFault
from offload.emit import HEADER, print_source
from offload.emit.division import divides_under_a_branch
from offload.ir.core import Function
from offload.ir.printer import print_function
from offload.ir.types import ArrayType, ScalarType
from offload.options import CompileOptions


class OutOfBoundsRead(KernelFault, IndexError):
    """A captured-array read outside the array, found with ``bounds_check=True``."""

    rule = "bounds"


def _source(fn: Function, options: CompileOptions, parallel: bool) -> tuple[str, CpuHooks]:
    hooks = CpuHooks(fn, options.bounds_check)
    text = (
        HEADER
        + "from numba import prange\n\n\n"
        + print_source(kernel_function(fn, hooks, parallel))
    )
    return text, hooks


class ForkGuard:
    """Whether a ``cpu-par`` launch here would run in a child forked after its parent ran
    parallel kernels on numba's GNU OpenMP threading layer, which kills such a child
    ("fork() called from a process already using GNU OpenMP"). numba's fork-safe layer
    (TBB) is not always installed and its ``workqueue`` layer aborts on concurrent calls
    from several threads, so the child runs the sequential kernel instead."""

    def __init__(self) -> None:
        self.pid: int | None = None
        """The process that first launched a parallel kernel."""

    def launched(self) -> None:
        """Note a parallel launch in this process (the first one counts)."""
        if self.pid is None:
            self.pid = os.getpid()

    def in_forked_child(self) -> bool:
        """True in a child forked after the parent's OpenMP threads started."""
        if self.pid is None or self.pid == os.getpid():
            return False
        from numba.np.ufunc.parallel import threading_layer

        try:
            return bool(threading_layer() == "omp")  # type: ignore[no-untyped-call]
        except ValueError:  # no layer started (cannot happen once the parent launched)
            return False


class CpuKernel:
    """A compiled element function: ``launch`` fills the outputs for every index."""

    def __init__(self, fn: Function, dispatcher: Any, hooks: CpuHooks, source: str) -> None:
        self.fn = fn
        self.fork_guard: ForkGuard | None = None
        """Set on ``cpu-par`` kernels (see ``ForkGuard``)."""
        self.sequential: Callable[[], CpuKernel] | None = None
        """The ``cpu-seq`` kernel of the same function, compiled on demand."""
        self.dispatcher = dispatcher
        self.source = source
        self.sites = list(hooks.sites)
        self.err_size = hooks.err_size if hooks.bounds_check else 1
        self.checked = hooks.bounds_check
        self.scalar_types: list[ScalarType | None] = [
            c.type if isinstance(c.type, ScalarType) else None for c in fn.captures
        ]
        self._warm = False
        self.loop_vectorize = True
        """False: compile without LLVM's loop vectoriser (``divides_under_a_branch``)."""

    def launch(self, shape: tuple[int, ...], outs: Sequence[Any], captures: Sequence[Any]) -> None:
        """Compute every element of ``shape`` into ``outs`` (one array per result)."""
        if any(n == 0 for n in shape):
            return
        if self.fork_guard is not None and self.sequential is not None:
            if self.fork_guard.in_forked_child():
                self.sequential().launch(shape, outs, captures)
                return
            self.fork_guard.launched()
        if len(shape) == 0:
            outs = [o.reshape(1) for o in outs]
        caps = [
            v if t is None else t.dtype.type(v)
            for v, t in zip(captures, self.scalar_types, strict=True)
        ]
        err = np.zeros(self.err_size, np.int64)
        try:
            if self._warm and self.loop_vectorize:
                self.dispatcher(*shape, *outs, *caps, err)
            elif self._warm:  # a new array layout compiles a new specialisation
                _without_loop_vectoriser(lambda: self.dispatcher(*shape, *outs, *caps, err))
            else:
                self._first_call(shape, outs, caps, err)
        except IndexError as exc:  # numba's own boundscheck (e.g. an out= of the wrong shape)
            raise KernelFault.at(
                f"out-of-bounds access in the kernel of '{self.fn.name}': {exc}", self.fn.span
            ) from None
        if self.checked and err[0] != 0:
            raise self._bounds_error(err)

    def _first_call(
        self, shape: tuple[int, ...], outs: Sequence[Any], caps: list[Any], err: Any
    ) -> None:
        from numba.core.errors import NumbaError, NumbaWarning

        # numba compiles on first call; its performance hints are not the user's business
        # (and would be errors under ``-W error``).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NumbaWarning)
            try:
                if self.loop_vectorize:
                    self.dispatcher(*shape, *outs, *caps, err)
                else:
                    _without_loop_vectoriser(lambda: self.dispatcher(*shape, *outs, *caps, err))
            except NumbaError as exc:
                raise CompileError.at(
                    f"numba could not compile the kernel for '{self.fn.name}': "
                    f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                    self.fn.span,
                    hint="this is a bug in offload; please report it with ol.explain output",
                ) from None
        self._warm = True

    def _bounds_error(self, err: Any) -> OutOfBoundsRead:
        site = int(err[0]) - 1
        cap_index, span = self.sites[site]
        cap = self.fn.captures[cap_index]
        n = self.fn.n_index
        elem = tuple(int(x) for x in err[1 : 1 + n])
        ndim = cap.type.ndim if isinstance(cap.type, ArrayType) else 0
        idx = tuple(int(x) for x in err[1 + n : 1 + n + ndim])
        error = OutOfBoundsRead.at(
            f"out-of-bounds read {cap.name}[{', '.join(map(str, idx))}] in element function "
            f"'{self.fn.name}' at element index {elem}",
            span if span is not None else self.fn.span,
            hint="check the index arithmetic, or clamp the index",
        )
        assert isinstance(error, OutOfBoundsRead)
        return error


def _without_loop_vectoriser(call: Callable[[], object]) -> None:
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


class CpuBackend:
    """``cpu-seq`` or ``cpu-par`` (see ``offload.backend.Backend``)."""

    def __init__(self, parallel: bool) -> None:
        self.parallel = parallel
        self.name = "cpu-par" if parallel else "cpu-seq"
        self._cache: dict[tuple[str, str], CpuKernel] = {}
        self._lock = threading.Lock()
        self.fork_guard = ForkGuard() if parallel else None

    def source(self, fn: Function, options: CompileOptions) -> str:
        """The Python source of the kernel ``compile`` would build (for ``ol.explain``)."""
        return _source(fn, options, self.parallel)[0]

    def compile(self, fn: Function, options: CompileOptions) -> CpuKernel:
        """Compile ``fn`` (cached on its printed IR and the options)."""
        key = (print_function(fn), options.key())
        with self._lock:
            kernel = self._cache.get(key)
        if kernel is not None:
            return kernel
        kernel = self._build(fn, options)
        with self._lock:
            return self._cache.setdefault(key, kernel)

    def _build(self, fn: Function, options: CompileOptions) -> CpuKernel:
        import math

        import numba

        ensure_int128_helpers()
        src, hooks = _source(fn, options, self.parallel)
        if "source" in options.print_kernels:
            print(f"// kernel source of {fn.name} ({self.name})\n{src}")
        digest = hashlib.sha256(src.encode()).hexdigest()[:12]
        filename = f"<offload {self.name} {fn.name} {digest}>"
        # numba reads kernel source through linecache (for its error messages)
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        namespace: dict[str, Any] = {"np": np, "math": math, "prange": numba.prange}
        try:
            exec(compile(src, filename, "exec"), namespace)
        except SyntaxError as exc:  # a bug in the emitter
            raise CompileError.at(
                f"offload emitted invalid kernel source for '{fn.name}': {exc}", fn.span
            ) from None
        flags: dict[str, Any] = {
            "error_model": "numpy",
            "boundscheck": options.bounds_check,
            "fastmath": options.fastmath,
            "nogil": True,
        }
        dispatcher = numba.njit(parallel=self.parallel, **flags)(namespace["kernel"])
        kernel = CpuKernel(fn, dispatcher, hooks, src)
        kernel.loop_vectorize = not (self.parallel and divides_under_a_branch(fn))
        if self.fork_guard is not None:
            kernel.fork_guard = self.fork_guard
            kernel.sequential = lambda: CPU_SEQ.compile(fn, options)
        return kernel

    def allocate(self, shape: tuple[int, ...], dtypes: Sequence[np.dtype[Any]]) -> list[Any]:
        """Fresh C-contiguous output arrays, one per dtype."""
        return [np.empty(shape, dtype=dt) for dt in dtypes]

    def writable(self, out: Any) -> bool:
        """numba kernels write any NumPy array, whatever its strides."""
        return isinstance(out, np.ndarray)

    def prepare_outputs(self, outs: Sequence[Any]) -> None:
        """Host arrays need nothing before a CPU kernel writes them."""

    def prepare_captures(self, captures: Sequence[Any]) -> list[Any]:
        """CPU kernels read host arrays directly; scalars pass through."""
        return list(captures)

    def pinned_captures(self, values: Sequence[Any]) -> dict[int, Pinned]:
        """CPU kernels are not specialised on array contents."""
        return {}

    def launcher(
        self, fn: Function, kernel: Any, values: Sequence[Any], general: Launcher
    ) -> Launcher | None:
        """The general launch serves: numba's dispatcher does its own argument work."""
        return None

    def explain(self, fn: Function, options: CompileOptions, shape: tuple[int, ...]) -> str:
        """The kernel source ``compile`` would build."""
        return f"== CPU kernel source ({self.name})\n{self.source(fn, options)}"


CPU_SEQ = CpuBackend(parallel=False)
"""The sequential CPU backend (one shared instance, so its kernel cache is shared)."""
CPU_PAR = CpuBackend(parallel=True)
"""The parallel CPU backend."""
