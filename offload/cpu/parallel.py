"""How a ``cpu-par`` kernel runs on several threads: a parallel driver, compiled once per
argument types and shared by every kernel, whose ``prange`` calls the kernel once per
thread on a contiguous range of its tasks, through the kernel's address.

A ``cpu-par`` kernel is a sequential numba function over a range of tasks
(``offload.cpu.loopnest``), compiled by numba's plain pipeline. Calling it from a
``prange`` by name would link its code into the driver, where LLVM optimises and compiles
it a second time; a call through its address (numba's first-class function call, with
numba's calling convention) leaves it compiled once, and leaves the driver independent of
the kernel: one driver serves every kernel whose arguments have the same types, and the
disk cache keeps it across processes. The threads are numba's (its threading layer, as
any ``prange``'s).
"""

from __future__ import annotations

import functools
import os
from typing import Any

from offload.cpu.diskcache import CpuDiskCache, kernel_key

KERNEL_FLAGS: dict[str, Any] = {"noalias": True}
"""numba compiler flags of every CPU kernel (``cpu-seq`` and ``cpu-par``) beyond the jit
options, which ``numba.njit`` has no option for (``flags_compiler``).

A ``cpu-par`` kernel is not a ``prange`` kernel: numba's parallel pipeline types,
simplifies and lowers the element body a second time, as the body of the gufunc it
outlines (a 9-way ``if``/``elif`` float32 stencil compiled in 2.6 s cold on ``cpu-par``
against 0.9 s on ``cpu-seq``, docs/ports.md). It is the element body in a sequential loop
over a range of tasks (``offload.cpu.loopnest``), compiled once by the plain pipeline and
run on numba's threads by the shared driver below. These flags keep what the parallel
pipeline gave the body: ``noalias`` on its array arguments, which numba sets on a gufunc
whose body makes no alias (every offload kernel's), and without which LLVM did not
vectorise backprojection's element loop (1.8x slower on one thread). ``cpu-seq``'s loop
nest gets them too (its backprojection took 4.2 ms at quick size against cpu-par's 2.3
ms on one thread without them). They assume nothing new: outputs never overlap the
captured arrays (``offload.runtime.overlap``: the driver stages an ``out=`` that may),
and captured arrays are only read."""


DRIVER_VERSION = 1
"""Part of the driver's disk-cache key: numba's cached machine code holds the code of
``offload.cpu.firstclass.kernel_at``, which the driver's source does not show (raise it
when that changes)."""
DRIVER_SOURCE = '''"""offload's cpu-par driver (offload.cpu.parallel)."""

from numba import prange

from offload.cpu.firstclass import kernel_at


def run_ranges(address, tasks, ranges, args):
    kernel = kernel_at(address, args)
    for r in prange(ranges):
        kernel(tasks * r // ranges, tasks * (r + 1) // ranges, *args)
'''
"""``run_ranges(address, tasks, ranges, args)``: ``kernel(lo, hi, *args)`` over ``ranges``
contiguous ranges of ``0 <= task < tasks``, spread over numba's threads as any ``prange``
(one each where there are as many threads, as ``numba.set_num_threads`` may make fewer),
where ``address`` is the kernel's entry point for the types of ``args``
(``entry_address``). It asks numba for no thread count: ``numba.get_num_threads`` in
compiled code is a call through an address that numba's cache cannot keep."""


def build_driver(disk: CpuDiskCache) -> Any:
    """The driver's dispatcher (``DRIVER_SOURCE``), from the disk cache's file where there
    is one (numba then caches its machine code beside it, per argument types)."""
    import numba

    flags: dict[str, Any] = {"error_model": "numpy", "nogil": True}
    key = kernel_key(DRIVER_SOURCE, f"{sorted(flags.items())};v{DRIVER_VERSION}", "cpu-par-driver")
    py_func = disk.function(key, DRIVER_SOURCE, "run_ranges")
    flags["cache"] = py_func is not None
    if py_func is None:
        namespace: dict[str, Any] = {}
        exec(compile(DRIVER_SOURCE, "<offload cpu-par driver>", "exec"), namespace)
        py_func = namespace["run_ranges"]
    return numba.njit(parallel=True, **flags)(py_func)


def entry_address(dispatcher: Any, argument_types: tuple[Any, ...]) -> int:
    """The address of ``dispatcher``'s compiled entry point for ``argument_types`` (numba
    types; the overload must exist)."""
    compiled = dispatcher.overloads[argument_types]
    address: int = compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name)
    return address


@functools.cache
def flags_compiler(extra: tuple[tuple[str, Any], ...]) -> Any:
    """numba's standard compiler (a ``pipeline_class``) that also sets the compiler flags
    ``extra``, which ``numba.njit`` has no option for (``KERNEL_FLAGS``)."""
    from numba.core.compiler import Compiler

    def define_pipelines(self: Any) -> Any:
        for name, value in extra:
            setattr(self.state.flags, name, value)
        return Compiler.define_pipelines(self)  # type: ignore[no-untyped-call]

    return type("FlagsCompiler", (Compiler,), {"define_pipelines": define_pipelines})


class ForkGuard:
    """Whether a ``cpu-par`` launch here would run in a child forked after its parent ran
    parallel kernels on numba's GNU OpenMP threading layer, which kills such a child
    ("fork() called from a process already using GNU OpenMP"). numba's fork-safe layer
    (TBB) is not always installed and its ``workqueue`` layer aborts on concurrent calls
    from several threads, so the child runs the kernel on one thread instead."""

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
