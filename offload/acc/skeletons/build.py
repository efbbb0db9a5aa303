"""Compiling skeleton modules for a target, and the arrays they run over.

A skeleton module is Python source holding scalar functions (``offload.acc.combine``) and
kernels whose bodies are ``loop(...)``-wrapped work items. ``compile_module`` executes it
and compiles each function for the target:

* ``cpu-seq`` / ``cpu-par``: scalar functions become ``numba.njit`` functions, kernels
  ``njit`` (``parallel=True`` for ``cpu-par``, where their loop is a ``prange``);
* ``gpu`` / ``gpu-sim``: scalar functions become ``numba.cuda`` device functions,
  kernels ``numba.cuda`` kernels launched over a 1-D grid (grid-stride loops), under the
  CUDA simulator for ``gpu-sim``.

Modules are cached in-process by (target, source text).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import linecache
import math
import threading
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from offload.acc.skeletons.rawlaunch import SMALL_GRID, RawLauncher, Template
from offload.cpu.threads import ThreadChoice, now
from offload.diagnostics import CompileError
from offload.runtime.frozen import FrozenLaunch

GPU_TARGETS = ("gpu", "gpu-sim")
THREADS = 256
"""Threads per block of a skeleton kernel."""
MAX_BLOCKS = 65536
"""Most blocks of a grid-stride launch (64-bit work counters past 2^31 items)."""
SIM_MAX_BLOCKS = 4
"""The simulator runs each thread as a Python thread: few blocks."""
SIM_THREADS = 32


def loop(target: str, count: str, var: str, body: str, indent: str = "    ") -> str:
    """``body`` (text indented by ``indent``) run once for each ``var`` in
    ``range(count)``, as the target's loop: sequential, ``prange``, or grid-stride."""
    inner = "\n".join(indent + "    " + line if line else "" for line in body.splitlines())
    if target == "cpu-seq":
        return f"{indent}for {var} in range({count}):\n{inner}\n"
    if target == "cpu-par":
        head = f"{indent}for {var}_ in prange({count}):\n{indent}    {var} = np.int64({var}_)\n"
        return f"{head}{inner}\n"
    return (
        f"{indent}{var} = np.int64(cuda.blockIdx.x) * np.int64(cuda.blockDim.x)"
        f" + np.int64(cuda.threadIdx.x)\n"
        f"{indent}stride_ = np.int64(cuda.gridDim.x) * np.int64(cuda.blockDim.x)\n"
        f"{indent}while {var} < {count}:\n{inner}\n{indent}    {var} += stride_\n"
    )


def dtype_ctor(dt: np.dtype[Any]) -> str:
    """The NumPy scalar constructor of ``dt`` as source (numba compiles it on both targets)."""
    return "np.bool_" if dt.kind == "b" else f"np.{dt.name}"


@dataclass
class Module:
    """The compiled functions of one skeleton module."""

    target: str
    kernels: dict[str, Any]
    threads: int | None = None
    """Threads per block of a GPU module whose kernels assume a fixed block size."""
    choices: dict[str, ThreadChoice] = field(default_factory=dict)
    """A ``cpu-par`` kernel's thread counts, by what its launches measured."""
    warm: set[str] = field(default_factory=set)
    """The kernels launched once (compiled): later launches are measurements."""
    raw: dict[str, RawLauncher] = field(default_factory=dict)
    """A ``gpu`` module's launchers (``rawlaunch``), by kernel."""

    def template(
        self, kernel: str, items: int, args: Sequence[Any], variable: Sequence[int], blocks: int
    ) -> Callable[..., None] | None:
        """``launch(kernel, items, *args, blocks=blocks)`` for later calls that change only
        the arguments at ``variable`` positions (of ``args``), given in order to the
        returned function (``rawlaunch.Template``); ``None`` off the GPU."""
        if self.target != "gpu" or items <= 0:
            return None
        made = Template(self._raw(kernel), (np.int64(items), *args), [k + 1 for k in variable])
        threads = self.threads or THREADS

        def launch(*values: Any) -> None:
            made.launch(blocks, threads, *values)

        return launch

    def freeze(
        self, kernel: str, items: int, args: Sequence[Any], variable: Sequence[int], blocks: int
    ) -> FrozenLaunch | None:
        """``launch(kernel, items, *args, blocks=blocks)`` frozen (``rawlaunch.Template.
        freeze``): later launches give new addresses for the arrays at ``variable``
        positions, which keep their shapes; ``None`` off the GPU or before a launch of
        these argument kinds."""
        if self.target != "gpu" or items <= 0:
            return None
        made = Template(self._raw(kernel), (np.int64(items), *args), [k + 1 for k in variable])
        return made.freeze(blocks, self.threads or THREADS, *[args[k] for k in variable])

    def _raw(self, kernel: str) -> RawLauncher:
        """The GPU launcher of ``kernel``, made on its first launch."""
        raw = self.raw.get(kernel)
        if raw is None:
            import cupy

            raw = self.raw[kernel] = RawLauncher(self.kernels[kernel], cupy)
        return raw

    def launch(self, kernel: str, items: int, *args: Any, blocks: int | None = None) -> None:
        """Run ``kernel`` over ``items`` work items (its first argument); ``blocks`` fixes
        a GPU grid (a kernel that runs in one block)."""
        if items <= 0:
            return
        fn = self.kernels[kernel]
        if self.target in GPU_TARGETS:
            threads = SIM_THREADS if self.target == "gpu-sim" else THREADS
            threads = self.threads or threads
            most = SIM_MAX_BLOCKS if self.target == "gpu-sim" else MAX_BLOCKS
            grid = blocks or max(1, min(most, -(-items // threads)))
            if self.target == "gpu":
                self._raw(kernel).launch(grid, threads, (np.int64(items), *args))
                return
            with warnings.catch_warnings():
                # a small grid is the right one for a short level of a tree or a tail
                warnings.filterwarnings("ignore", message=SMALL_GRID)
                fn[grid, threads](np.int64(items), *args)
        elif self.target == "cpu-par":
            self._launch_parallel(kernel, fn, items, args)
        else:
            fn(np.int64(items), *args)

    def _launch_parallel(self, kernel: str, fn: Any, items: int, args: tuple[Any, ...]) -> None:
        """``fn`` on one thread or on all (the caller's numba thread count), whichever its
        launches measure faster (``offload.cpu.threads``: small work and a loaded machine
        take one). The work split of every skeleton is fixed by the sizes, not the thread
        count, so the bits are the same either way."""
        import numba

        choice = self.choices.get(kernel)
        if choice is None:
            choice = self.choices[kernel] = ThreadChoice(int(numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
        threads = choice.pick(items)
        before = numba.get_num_threads()
        numba.set_num_threads(1 if threads == 1 else before)
        try:
            start = now()
            fn(np.int64(items), *args)
            elapsed = now() - start
        finally:
            numba.set_num_threads(before)
        if kernel in self.warm:
            choice.record(items, threads, elapsed)
        self.warm.add(kernel)


_CACHE: dict[tuple[str, str, int | None, bool, int], Module] = {}
_LOCK = threading.Lock()


class Remembered:
    """Values made once per key -- a skeleton's compiled module, a tree's level tables on
    the device -- so that a warm call makes no source text and copies nothing. A key may
    hold an object's ``id`` (a combine's ``ScalarFunction``): pass the object as ``keep``
    and it is held with the value, so the id stays unique. At most ``most`` values (all
    dropped when full)."""

    def __init__(self, most: int = 256) -> None:
        self.most = most
        self._values: dict[tuple[object, ...], tuple[object, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[object, ...], make: Callable[[], Any], keep: object = None) -> Any:
        with self._lock:
            hit = self._values.get(key)
        if hit is not None and hit[0] is keep:
            return hit[1]
        value = make()
        with self._lock:
            if len(self._values) >= self.most:
                self._values.clear()
            self._values[key] = (keep, value)
        return value


def compile_module(
    target: str,
    source: str,
    helpers: Sequence[str],
    kernels: Sequence[str],
    extra: dict[str, Any],
    *,
    threads: int | None = None,
    bounded: bool = False,
    per_sm: int = 1,
) -> Module:
    """Compile ``source``'s ``helpers`` (device/njit functions) and ``kernels`` for
    ``target``; ``extra`` adds names to the module namespace (intrinsics); ``threads``
    fixes a GPU module's block size, ``bounded`` compiles its kernels for that size
    (``launch_bounds``: the registers a thread may use leave room for ``per_sm`` such
    blocks on a multiprocessor)."""
    key = (target, source, threads, bounded, per_sm)
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    bound = ((threads or THREADS), per_sm) if bounded and target == "gpu" else None
    module = _build(target, source, helpers, kernels, extra, bound)
    module.threads = threads
    with _LOCK:
        return _CACHE.setdefault(key, module)


def _build(  # noqa: PLR0917  (compile_module's arguments)
    target: str,
    source: str,
    helpers: Sequence[str],
    kernels: Sequence[str],
    extra: dict[str, Any],
    bound: tuple[int, int] | None = None,
) -> Module:
    if target == "gpu-sim":
        source = _quiet(source, kernels)
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    filename = f"<offload skeleton {target} {digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"np": np, "math": math, **extra}
    if target in GPU_TARGETS:
        from offload.ptx.numba_compat import ensure_compatible

        ensure_compatible()  # numba-cuda's typing tables on this NumPy (2.5: row_stack)
        from numba import cuda

        namespace["cuda"] = cuda
        if target == "gpu-sim":
            from offload.ptx.intrinsics import SIMULATOR_MATH

            namespace["math"] = SIMULATOR_MATH
    else:
        import numba

        namespace["prange"] = numba.prange
    try:
        exec(compile(source, filename, "exec"), namespace)
    except SyntaxError as exc:
        raise CompileError(f"offload emitted an invalid skeleton: {exc}") from None
    out: dict[str, Any] = {}
    if target in GPU_TARGETS:
        from numba import cuda

        for h in helpers:
            namespace[h] = cuda.jit(device=True)(namespace[h])  # type: ignore[no-untyped-call]
        for k in kernels:
            fn = namespace[k]
            if bound is None:
                out[k] = cuda.jit(fn)  # type: ignore[no-untyped-call]
            else:
                out[k] = cuda.jit(launch_bounds=bound)(fn)  # type: ignore[no-untyped-call, call-arg]
    else:
        import numba

        for h in helpers:
            namespace[h] = numba.njit(error_model="numpy", inline="always")(namespace[h])
        for k in kernels:
            out[k] = _Quiet(
                numba.njit(parallel=target == "cpu-par", error_model="numpy", nogil=True)(
                    namespace[k]
                )
            )
    return Module(target, out)


def _quiet(source: str, kernels: Sequence[str]) -> str:
    """The simulator runs kernels as Python over NumPy scalars, which warn on integer
    wrap-around (the language says integers wrap silently): each kernel's body runs under
    ``np.errstate(all="ignore")`` (inside the kernel: simulator threads do not inherit
    the caller's error state)."""
    tree = ast.parse(source)
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name in kernels:
            quiet = ast.parse('with np.errstate(all="ignore"):\n    pass').body[0]
            assert isinstance(quiet, ast.With)
            quiet.body = stmt.body
            stmt.body = [quiet]
    return ast.unparse(ast.fix_missing_locations(tree))


class _Quiet:
    """An njit dispatcher whose performance warnings stay quiet (not the user's business;
    errors under ``-W error``). numba warns while it compiles a specialisation, so only
    compiling is wrapped (the dispatcher looks ``_compile_for_args`` up on itself): a
    warm launch pays no ``catch_warnings``, about 11 µs a launch on CPython 3.11."""

    def __init__(self, dispatcher: Any) -> None:
        self.dispatcher = dispatcher
        compile_for_args = dispatcher._compile_for_args

        def quiet_compile(*args: Any, **kws: Any) -> Any:
            from numba.core.errors import NumbaWarning

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", NumbaWarning)
                return compile_for_args(*args, **kws)

        dispatcher._compile_for_args = quiet_compile

    def __call__(self, *args: Any) -> Any:
        from numba.core.errors import NumbaError

        try:
            return self.dispatcher(*args)
        except NumbaError as exc:
            first = str(exc)[:2000] if str(exc) else type(exc).__name__
            raise CompileError(
                f"numba could not compile a skeleton (a bug in offload): {first}"
            ) from None


# -- arrays on the target ---------------------------------------------------------------


def is_gpu(target: str) -> bool:
    return target == "gpu"


def xp_for(target: str) -> Any:
    """The array module of the target's working arrays (CuPy on the GPU, else NumPy)."""
    if is_gpu(target):  # (the gpu backend of the call has loaded CuPy already)
        import cupy

        return cupy
    return np


def working(target: str, x: Any, backend: Any = None) -> Any:
    """``x`` as a C-contiguous working array of the target (a CuPy array on the GPU, a
    host array in the simulator and on the CPU). On the GPU a host array goes through
    ``backend.prepare_captures`` where the call's backend has it: a managed array is read
    in place (prefetched) and an array frozen with ``ol.use`` from its cached device copy,
    as an element-function kernel reads them; else it is copied."""
    if is_gpu(target):
        cp = xp_for(target)
        if isinstance(x, np.ndarray):
            view = _backend_view(cp, x, backend)
            if view is None:
                view = managed_view(cp, x)
            x = view if view is not None else cp.asarray(x)
        return cp.ascontiguousarray(x)
    if hasattr(x, "__cuda_array_interface__") and hasattr(x, "get"):
        x = x.get()
    return np.ascontiguousarray(x)


MANAGED = 3
"""``cudaMemoryTypeManaged``."""


def managed_view(cp: Any, x: Any, prefetch: bool = True) -> Any:
    """A CuPy array over the same memory as ``x`` when ``x`` is a NumPy array in CUDA
    managed memory (a unified-mode result), prefetched to the device; else ``None`` (a
    host array is copied by the caller)."""
    if not isinstance(x, np.ndarray) or x.size == 0 or not x.flags.c_contiguous:
        return None
    ptr = int(x.__array_interface__["data"][0])
    try:
        if int(cp.cuda.runtime.pointerGetAttributes(ptr).type) != MANAGED:
            return None
    except Exception:  # not a pointer the driver knows: plain host memory
        return None
    view = view_over(cp, x, ptr)
    if prefetch:
        try:  # a hint: failing only costs page faults
            stream = int(cp.cuda.get_current_stream().ptr)
            cp.cuda.runtime.memPrefetchAsync(ptr, x.nbytes, cp.cuda.Device().id, stream)
        except Exception:
            pass
    return view


def view_over(cp: Any, x: np.ndarray[Any, Any], ptr: int) -> Any:
    """A CuPy array over C-contiguous ``x``'s memory at device address ``ptr`` (managed
    memory: the same address on both sides), keeping ``x`` alive."""
    mem = cp.cuda.UnownedMemory(ptr, x.nbytes, x)
    return cp.ndarray(x.shape, x.dtype, cp.cuda.MemoryPointer(mem, 0))


def host(x: Any) -> np.ndarray[Any, Any]:
    """A host copy (or view) of a working array."""
    if hasattr(x, "get") and not isinstance(x, np.ndarray):
        return np.asarray(x.get())
    return np.asarray(x)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def captured(target: str, values: Sequence[Any], backend: Any = None) -> list[Any]:
    """A scalar function's captured values for a kernel of ``target``: arrays as working
    arrays, scalars (NumPy scalars included) as they are."""
    return [working(target, v, backend) if _is_array(v) else v for v in values]


def _backend_view(cp: Any, x: Any, backend: Any) -> Any:
    """A CuPy array over the device memory ``backend.prepare_captures`` gives a NumPy
    array (see ``working``), or ``None`` (no such backend, or not a host array)."""
    prepare = getattr(backend, "prepare_captures", None)
    if prepare is None or not isinstance(x, np.ndarray) or x.size == 0:
        return None
    arg = prepare([x])[0]
    if not isinstance(arg, tuple) or len(arg) != 4:
        return None
    ptr, shape, strides, keep = arg
    if type(keep) is cp.ndarray and keep.shape == x.shape and keep.dtype == x.dtype:
        return keep  # (a frozen array's device copy itself: no view to build)
    item = x.dtype.itemsize
    lo = min([0, *((n - 1) * s for n, s in zip(shape, strides, strict=True) if s < 0)])
    hi = max([0, *((n - 1) * s for n, s in zip(shape, strides, strict=True) if s > 0)])
    mem = cp.cuda.UnownedMemory(int(ptr) + lo * item, (hi - lo + 1) * item, keep)
    return cp.ndarray(
        tuple(shape),
        x.dtype,
        cp.cuda.MemoryPointer(mem, -lo * item),
        strides=tuple(s * item for s in strides),
    )


def _is_array(v: Any) -> bool:
    return isinstance(v, np.ndarray) or hasattr(v, "__cuda_array_interface__")


def kernel_ptx(
    source: str,
    helpers: Sequence[str],
    kernel: str,
    example_args: Sequence[Any],
    cc: tuple[int, int] = (9, 0),
) -> str:
    """PTX of ``kernel`` of a ``gpu`` skeleton module for arguments typed like
    ``example_args`` (arrays, NumPy scalars): compiled without a GPU, for inspection and
    the ptx test lane."""
    from offload.ptx.numba_compat import ensure_compatible

    ensure_compatible()
    import numba
    from numba import cuda

    namespace: dict[str, Any] = {"np": np, "math": math, "cuda": cuda}
    exec(compile(source, "<offload skeleton ptx>", "exec"), namespace)
    for h in helpers:
        namespace[h] = cuda.jit(device=True)(namespace[h])  # type: ignore[no-untyped-call]
    sig = tuple(numba.typeof(a) for a in example_args)  # type: ignore[no-untyped-call]
    with _device_of_capability(cc):
        compile_ptx: Any = getattr(cuda, "compile_ptx")  # noqa: B009 (untyped in numba-cuda)
        ptx, _ = compile_ptx(namespace[kernel], sig, cc=cc)
    return str(ptx)


@contextlib.contextmanager
def _device_of_capability(cc: tuple[int, int]) -> Iterator[None]:
    """numba-cuda compiles a device function called from a kernel for the *current*
    device's compute capability, even inside ``compile_ptx(cc=...)``; without a GPU
    there is none. For the length of one PTX compile its dispatcher sees a stand-in
    device of capability ``cc`` (a module-level name of numba-cuda's dispatcher module;
    a numba-cuda without it compiles as before)."""
    from numba.cuda import dispatcher

    real = getattr(dispatcher, "get_current_device", None)
    if real is None:
        yield
        return
    with _LOCK:
        stand_in = types.SimpleNamespace(compute_capability=cc)
        setattr(dispatcher, "get_current_device", lambda: stand_in)  # noqa: B010
        try:
            yield
        finally:
            setattr(dispatcher, "get_current_device", real)  # noqa: B010
