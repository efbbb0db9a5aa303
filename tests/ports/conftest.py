"""The ports run in every lane: the sim-marked tests only where numba's CUDA simulator is on
(``NUMBA_ENABLE_CUDASIM=1 OFFLOAD_GPU_SIMULATOR=1``, as tools/test.sh runs the sim lane),
the gpu-marked ones only where CuPy sees a CUDA device."""

from __future__ import annotations

import os

import pytest


def _sim_reason() -> str | None:
    import numba

    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and numba.config.ENABLE_CUDASIM:
        if os.environ.get("OFFLOAD_GPU_SIMULATOR") == "1":
            return None
    return (
        "sim lane: run with NUMBA_ENABLE_CUDASIM=1 OFFLOAD_GPU_SIMULATOR=1 "
        "python -m pytest -m sim tests/ports"
    )


def _gpu_reason() -> str | None:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reasons: dict[str, str | None] = {}
    for item in items:
        if "tests/ports/" not in str(item.fspath).replace(os.sep, "/"):
            continue
        for lane, why in (("sim", _sim_reason), ("gpu", _gpu_reason)):
            if item.get_closest_marker(lane) is None:
                continue
            if lane not in reasons:
                reasons[lane] = why()
            if reasons[lane]:
                item.add_marker(pytest.mark.skip(reason=reasons[lane]))
