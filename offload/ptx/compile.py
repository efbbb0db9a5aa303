"""Kernel source -> PTX through ``numba.cuda.compile_ptx`` (no GPU needed), or -> a
simulator kernel through ``numba.cuda.jit`` under ``NUMBA_ENABLE_CUDASIM=1``.

Everything numba-specific of the GPU backend is in this module.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import linecache
import math
from typing import Any

import numpy as np

from offload.diagnostics import CompileError, UnsupportedSyntax
from offload.emit.recursion import compile_room, from_recursion, recursion_room
from offload.ptx.cubin import linker_version
from offload.ptx.intrinsics import SIMULATOR_FUNCTIONS, SIMULATOR_MATH, device_intrinsics
from offload.ptx.kernel_source import KernelSource, ParamKind
from offload.ptx.numba_compat import ensure_compatible


def _numba_type(
    param_kind: ParamKind, dtype: np.dtype[Any] | None, index_dtype: np.dtype[Any]
) -> Any:
    from numba import types
    from numba.np.numpy_support import from_dtype

    if param_kind in (ParamKind.EXTENT, ParamKind.CAP_EXTENT, ParamKind.CAP_STRIDE):
        return from_dtype(index_dtype)
    assert dtype is not None
    if param_kind == ParamKind.SCALAR:
        return from_dtype(dtype)
    # bool arrays travel as uint8 pointers (numba cannot store i1 through a bool*).
    elem = types.uint8 if dtype.kind == "b" else from_dtype(dtype)
    return types.CPointer(elem)  # type: ignore[no-untyped-call]


def signature(ks: KernelSource) -> tuple[Any, ...]:
    """The numba argument types of ``ks``'s parameters."""
    return tuple(_numba_type(p.kind, p.dtype, ks.index_dtype) for p in ks.params)


def python_function(ks: KernelSource, user_name: str, simulator: bool = False) -> Any:
    """Execute the kernel source and return the plain Python function it defines.

    The source's ``nsw_*_i32`` calls (``offload.ptx.intrinsics``) are bound to the numba-cuda
    intrinsics, or with ``simulator`` to plain Python (the simulator cannot run intrinsics);
    with ``simulator``, ``math`` is ``SIMULATOR_MATH`` (NumPy's NaN/inf for math errors, as
    the device and the CPU give, where Python's ``math`` raises)."""
    ensure_compatible()
    from numba import cuda

    filename = f"<offload kernel {user_name}>"
    # Registered with linecache so that numba's (debug-mode) errors can show the line.
    linecache.cache[filename] = (len(ks.source), None, ks.source.splitlines(True), filename)
    namespace: dict[str, Any] = {
        "np": np,
        "math": SIMULATOR_MATH if simulator else math,
        "cuda": cuda,
    }
    namespace.update(SIMULATOR_FUNCTIONS if simulator else device_intrinsics())
    exec(compile(ks.source, filename, "exec"), namespace)
    return namespace[ks.name]


@functools.cache
def tool_versions() -> tuple[tuple[str, str], ...]:
    """(tool, version) pairs that change generated code (PTX, and the cubin linked from it):
    part of every cache key."""
    ensure_compatible()
    import numba
    from numba.cuda.cudadrv import nvvm

    try:
        import numba_cuda  # type: ignore[import-untyped]

        nc = str(numba_cuda.__version__)
    except ImportError:
        nc = "none"
    try:
        nvvm_ver = ".".join(str(v) for v in nvvm.NVVM().get_version())  # type: ignore[no-untyped-call]
    except Exception:  # no libNVVM: compile_ptx will fail with a clearer error
        nvvm_ver = "none"
    return (
        ("offload-ptx", "3"),  # 2: nsw index arithmetic; 3: 3-D thread mapping, rsqrt
        ("numba", numba.__version__),
        ("numba-cuda", nc),
        ("nvvm", nvvm_ver),
        ("nvjitlink", linker_version() or "none"),  # makes the cubin cached beside the PTX
    )


def compile_ptx(
    ks: KernelSource, user_name: str, cc: tuple[int, int], fastmath: bool = False
) -> str:
    """PTX text for ``ks`` with entry ``ks.name`` (raises ``CompileError``).

    Without ``fastmath`` NVVM must not contract ``a * b + c`` into an FMA (its default):
    every float op rounds on its own, like NumPy, so results match the CPU bit for bit."""
    pyfunc = python_function(ks, user_name)
    try:
        with recursion_room(compile_room(ks.source)):
            return _ptx_without_contraction(pyfunc, ks, cc, fastmath)
    except Exception as exc:
        if from_recursion(exc):
            raise UnsupportedSyntax(
                f"'{user_name}' is too large for numba-cuda to compile (its compile recursed "
                "past Python's recursion limit); make the function smaller: a captured lookup "
                "array or arithmetic instead of long if/elif chains"
            ) from None
        raise CompileError(
            f"offload could not compile '{user_name}' for the GPU (a bug in offload; "
            f"the generated kernel is shown by ol.explain): {type(exc).__name__}: {exc}"
        ) from exc


def _ptx_without_contraction(
    pyfunc: Any, ks: KernelSource, cc: tuple[int, int], fastmath: bool
) -> str:
    from numba.cuda import compiler

    lock = getattr(compiler, "global_compiler_lock", None)
    fixup = getattr(compiler, "_compile_pyfunc_with_fixup", None)
    if lock is None or fixup is None:  # numba-cuda changed: the public API (contracts FMA)
        ptx, _ = compiler.compile_ptx(  # type: ignore[no-untyped-call]
            pyfunc, signature(ks), cc=cc, fastmath=fastmath, abi_info={"abi_name": ks.name}
        )
        return str(ptx)
    with lock:
        # compile_ptx's own steps, with NVVM's fma option set (compile_ptx exposes no knob).
        lib, _ = fixup(
            pyfunc,
            signature(ks),
            device=False,
            fastmath=fastmath,
            cc=cc,
            abi="numba",
            abi_info={"abi_name": ks.name},
        )
        if not fastmath:
            lib._nvvm_options["fma"] = False
        codes = lib.get_asm_strs(cc=cc)
    if len(codes) != 1:
        raise RuntimeError(f"expected one PTX module, got {len(codes)}")
    return str(codes[0])


def llvm_ir(ks: KernelSource, user_name: str, cc: tuple[int, int]) -> str:
    """The LLVM IR numba hands NVVM for ``ks`` (before NVVM optimises it), for inspection
    and tests: e.g. whether index arithmetic carries ``nsw``. Raises ``CompileError``."""
    from numba.cuda import compiler

    fixup = getattr(compiler, "_compile_pyfunc_with_fixup", None)
    if fixup is None:
        raise CompileError("this numba-cuda does not expose the kernel's LLVM IR")
    pyfunc = python_function(ks, user_name)
    with getattr(compiler, "global_compiler_lock", contextlib.nullcontext()):
        lib, _ = fixup(
            pyfunc, signature(ks), device=False, fastmath=False, cc=cc, abi="numba",
            abi_info={"abi_name": ks.name},
        )  # fmt: skip
        return str(lib.get_llvm_str())


def simulator_kernel(ks: KernelSource, user_name: str) -> Any:
    """A ``numba.cuda.jit`` kernel of the same source, for the CUDA simulator (its pointer
    parameters take flat 1-D NumPy arrays).

    The simulator runs the body as Python over NumPy scalars, which warn on integer
    overflow; the IR says integers wrap silently, so the body runs under
    ``np.errstate(all="ignore")`` (set inside the kernel: the simulator's threads do not
    inherit the caller's error state).
    """
    ensure_compatible(simulator=True)
    from numba import cuda

    tree = ast.parse(ks.source)
    kernel = next(s for s in tree.body if isinstance(s, ast.FunctionDef))  # after constants
    quiet = ast.parse('with np.errstate(all="ignore"):\n    pass').body[0]
    assert isinstance(quiet, ast.With)
    quiet.body = kernel.body
    kernel.body = [quiet]
    source = ast.unparse(ast.fix_missing_locations(tree))
    sim = dataclasses.replace(ks, source=source)
    return cuda.jit(python_function(sim, user_name, simulator=True))  # type: ignore[no-untyped-call]
