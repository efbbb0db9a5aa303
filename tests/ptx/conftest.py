"""Shared, compiled-once PTX for the ptx lane (each compile costs ~0.1-1 s)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from offload.ptx.compile import compile_ptx
from offload.ptx.kernel_source import KernelSource, build_kernel_source
from tests.ptx.irfixtures import ALL


@functools.cache
def kernel(name: str, bounds_check: bool = False) -> KernelSource:
    return build_kernel_source(ALL[name](), bounds_check=bounds_check)


@functools.cache
def ptx(name: str, fastmath: bool = False, bounds_check: bool = False) -> str:
    return compile_ptx(kernel(name, bounds_check), name, (9, 0), fastmath=fastmath)


@pytest.fixture
def fake_cupy(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Installs ``test_launch_fastpath``'s fake CuPy (a compute capability 9.0 device) as
    ``cupy``; the runtime's caches are cleared around the test."""
    from offload import driver
    from offload.runtime import gpu
    from tests.ptx.test_launch_fastpath import make_cupy

    cp, state = make_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cp)
    gpu.load_cupy.cache_clear()
    gpu.device_info.cache_clear()
    yield cp, state
    gpu.load_cupy.cache_clear()
    gpu.device_info.cache_clear()
    driver.clear_dispatch_table()
