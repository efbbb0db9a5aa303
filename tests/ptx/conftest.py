"""Shared, compiled-once PTX for the ptx lane (each compile costs ~0.1-1 s)."""

from __future__ import annotations

import functools

from offload.ptx.compile import compile_ptx
from offload.ptx.kernel_source import KernelSource, build_kernel_source
from tests.ptx.irfixtures import ALL


@functools.cache
def kernel(name: str, bounds_check: bool = False) -> KernelSource:
    return build_kernel_source(ALL[name](), bounds_check=bounds_check)


@functools.cache
def ptx(name: str, fastmath: bool = False, bounds_check: bool = False) -> str:
    return compile_ptx(kernel(name, bounds_check), name, (9, 0), fastmath=fastmath)
