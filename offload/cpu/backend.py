"""The CPU backends ``cpu-seq`` (one thread) and ``cpu-par`` (all cores).

``compile`` emits the kernel source (``offload.cpu.loopnest``), executes it and wraps the
function in a ``numba.njit`` dispatcher; numba specialises it per array layout (C, F,
any-strided) on first use. Compiled kernels are cached in-process on the printed IR and the
options.

A ``cpu-par`` kernel is compiled by numba's plain pipeline too, not its parallel one: it is
a sequential function over a range of tasks (``KERNEL_FLAGS`` says why, and with what
flags both backends compile),
which a shared parallel driver runs on numba's threads (``offload.cpu.parallel``).
"""

from __future__ import annotations

import hashlib
import linecache
import math
import os
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from offload.backend import Launcher, Pinned, PreparedLaunches
from offload.cpu.diskcache import CpuDiskCache, kernel_key
from offload.cpu.kernel import CpuKernel, foreign_array, host_array
from offload.cpu.loopnest import TILES_KERNEL, CpuHooks, kernel_function
from offload.cpu.parallel import KERNEL_FLAGS, ForkGuard, flags_compiler
from offload.cpu.symbols import ensure_int128_helpers
from offload.cpu.threads import ThreadChoice, quiet_threading
from offload.diagnostics import CompileError
from offload.emit import HEADER, print_source
from offload.emit.division import divides_under_a_branch
from offload.ir.core import Function
from offload.ir.ops import Opcode
from offload.ir.printer import print_function
from offload.ir.types import ArrayType
from offload.opt.manager import run_pipeline
from offload.opt.registry import COMMON
from offload.opt.scalarize import ScalarizeLocalArrays
from offload.options import CompileOptions

CPU_PASSES = {**COMMON, ScalarizeLocalArrays.name: ScalarizeLocalArrays}
"""The common passes and the CPU's own (through the one pass manager)."""
CPU_PIPELINE = "scalarize,fold,copyprop,cse,dce"
"""Run on a function with local arrays before its kernel is emitted: numba keeps an
``np.empty`` in memory, where LLVM would keep constant-index elements in registers."""


def _source(fn: Function, options: CompileOptions, parallel: bool) -> tuple[str, CpuHooks]:
    if any(op.opcode is Opcode.LOCAL for op in fn.ops()):
        fn = run_pipeline(fn, options, pipeline=CPU_PIPELINE, registry=CPU_PASSES)
    hooks = CpuHooks(fn, options.bounds_check)
    text = HEADER + "\n\n" + print_source(kernel_function(fn, hooks, parallel))
    return text, hooks


class CpuBackend(PreparedLaunches):
    """``cpu-seq`` or ``cpu-par`` (see ``offload.backend.Backend``)."""

    def __init__(self, parallel: bool) -> None:
        self.parallel = parallel
        self.name = "cpu-par" if parallel else "cpu-seq"
        self._cache: dict[tuple[str, str], CpuKernel] = {}
        self._lock = threading.Lock()
        self.fork_guard = ForkGuard() if parallel else None
        self._driver: Any = None
        if parallel:
            quiet_threading()

    @staticmethod
    def use_cache_dir(directory: str | os.PathLike[str] | None) -> None:
        """Keep compiled kernels under ``directory`` (``ol.config.cache_dir``) from now on."""
        DISK.use(directory)

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
        import numba

        ensure_int128_helpers()
        src, hooks = _source(fn, options, self.parallel)
        if "source" in options.print_kernels:
            print(f"// kernel source of {fn.name} ({self.name})\n{src}")
        digest = hashlib.sha256(src.encode()).hexdigest()[:12]
        filename = f"<offload {self.name} {fn.name} {digest}>"
        # numba reads kernel source through linecache (for its error messages)
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        flags: dict[str, Any] = {
            "error_model": "numpy",
            "boundscheck": options.bounds_check,
            "fastmath": options.fastmath,
            "nogil": True,
        }
        extra = tuple(sorted(KERNEL_FLAGS.items()))
        compiler = flags_compiler(extra)
        flags_key = f"{options.key()};{sorted(flags.items())};{extra}"
        key = kernel_key(src, flags_key, self.name)
        try:
            # From the disk cache's file where there is one (numba then caches the machine
            # code beside it), else from memory.
            py_func = DISK.function(key, src, "kernel")
            flags["cache"] = py_func is not None
            if py_func is None:
                namespace: dict[str, Any] = {"np": np, "math": math}
                exec(compile(src, filename, "exec"), namespace)
                py_func = namespace["kernel"]
        except SyntaxError as exc:  # a bug in the emitter
            raise CompileError.at(
                f"offload emitted invalid kernel source for '{fn.name}': {exc}", fn.span
            ) from None
        jit = numba.njit(pipeline_class=compiler, **flags)
        dispatcher = jit(py_func)
        if flags["cache"]:
            _quiet_cache_saves(dispatcher)
        kernel = CpuKernel(fn, dispatcher, hooks, src)
        tiles = py_func.__globals__.get(TILES_KERNEL)
        if tiles is not None:  # (cpu-par of rank >= 2: the kernel of long rows, same module)

            def tiles_dispatcher() -> Any:
                made = jit(tiles)
                if flags["cache"]:
                    _quiet_cache_saves(made)
                return made

            kernel.tiles = tiles_dispatcher
        # LLVM's loop vectoriser miscompiles a range kernel's run-time divisor under a
        # branch (tests/cpu/test_parfor_udiv_segfault.py: with or without noalias)
        kernel.loop_vectorize = not (self.parallel and divides_under_a_branch(fn))
        if self.fork_guard is not None:
            kernel.zero_d_captures = tuple(
                k
                for k, c in enumerate(fn.captures)
                if isinstance(c.type, ArrayType) and c.type.ndim == 0
            )
            kernel.fork_guard = self.fork_guard
            kernel.driver = self.driver
            kernel.threads = ThreadChoice(int(numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
        return kernel

    def driver(self) -> Any:
        """``cpu-par``'s parallel driver (``offload.cpu.parallel``), built on first need."""
        if self._driver is None:
            from offload.cpu.parallel import build_driver

            driver = build_driver(DISK)
            _quiet_cache_saves(driver)
            with self._lock:
                if self._driver is None:
                    self._driver = driver
        return self._driver

    def allocate(self, shape: tuple[int, ...], dtypes: Sequence[np.dtype[Any]]) -> list[Any]:
        """Fresh C-contiguous output arrays, one per dtype."""
        return [np.empty(shape, dtype=dt) for dt in dtypes]

    def writable(self, out: Any) -> bool:
        """numba kernels write any writeable NumPy array, whatever its strides, and any
        host array exposing ``__array_interface__`` or DLPack (written through a NumPy view
        of its memory, ``host_array``)."""
        if isinstance(out, np.ndarray):
            return bool(out.flags.writeable)
        try:
            return bool(host_array(out).flags.writeable)
        except (TypeError, ValueError, BufferError, RuntimeError):
            return False

    def prepare_outputs(self, outs: Sequence[Any]) -> None:
        """Host arrays need nothing before a CPU kernel writes them."""

    def prepare_captures(self, captures: Sequence[Any]) -> list[Any]:
        """CPU kernels read host arrays directly; scalars pass through; other host arrays
        (``__array_interface__``, DLPack: torch or JAX CPU tensors) as NumPy views of their
        memory, without a copy."""
        return [host_array(c) if foreign_array(c) else c for c in captures]

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


def _quiet_cache_saves(dispatcher: Any) -> None:
    """numba warns where it cannot save a specialisation to its cache (e.g. a parallel
    kernel over a strided array uses "dynamic globals"); that kernel then just compiles in
    each process, which is not the user's business (nor an error under ``-W error``). The
    save may come with any later call that compiles a new specialisation, outside
    ``_first_call``'s filter, so the cache's own save is wrapped."""
    from numba.core.errors import NumbaWarning

    cache = getattr(dispatcher, "_cache", None)
    save = getattr(cache, "save_overload", None)
    if save is None:
        return

    def quiet_save(sig: Any, data: Any) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NumbaWarning)
            save(sig, data)

    setattr(cache, "save_overload", quiet_save)  # noqa: B010  (numba's object, typed Any)


DISK = CpuDiskCache()
"""The CPU kernels' disk cache (both backends; off until ``use_cache_dir``)."""
CPU_SEQ = CpuBackend(parallel=False)
"""The sequential CPU backend (one shared instance, so its kernel cache is shared)."""
CPU_PAR = CpuBackend(parallel=True)
"""The parallel CPU backend."""
