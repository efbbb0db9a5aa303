"""The sim lane's guard for tests outside tests/sim: they need NUMBA_ENABLE_CUDASIM=1 set
before numba is imported (``tests/sim/conftest.py`` explains)."""

from __future__ import annotations

import os

import pytest


def simulator_on() -> bool:
    import numba

    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and bool(numba.config.ENABLE_CUDASIM)


needs_simulator = pytest.mark.skipif(
    not simulator_on(),
    reason="sim lane: run with NUMBA_ENABLE_CUDASIM=1 python -m pytest -m sim tests/acc",
)


def _gpu_simulator_on() -> bool:
    import offload as ol

    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and bool(ol.config.gpu_simulator)


GPU_SIMULATOR_LANE = [
    pytest.mark.sim,
    pytest.mark.skipif(
        not _gpu_simulator_on(),
        reason="sim lane: NUMBA_ENABLE_CUDASIM=1 OFFLOAD_GPU_SIMULATOR=1 python -m pytest -m sim",
    ),
]
"""``pytestmark`` of a module whose ``compute_g`` runs under the simulator."""


def _gpu_reason() -> str | None:
    if simulator_on():
        return "gpu lane: the CUDA simulator is on"
    try:
        import cupy
    except ImportError:
        return "gpu lane: CuPy is not installed"
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            return "gpu lane: no CUDA device"
    except Exception as exc:
        return f"gpu lane: no usable CUDA device ({exc})"
    return None


_GPU_REASON = _gpu_reason()
needs_gpu = pytest.mark.skipif(_GPU_REASON is not None, reason=_GPU_REASON or "")


def cross_target_s(node: object) -> object:
    """``compute_s(node)`` under ``cross_target``: the tree every target shares."""
    import offload as ol

    saved = ol.config.determinism
    ol.config.determinism = "cross_target"
    try:
        return ol.compute_s(node)  # type: ignore[call-overload]
    finally:
        ol.config.determinism = saved
