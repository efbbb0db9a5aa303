"""The gpu lane: skipped where there is no CuPy or no CUDA device."""

from __future__ import annotations

import pytest


def _gpu_reason() -> str | None:
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
    reason = None
    for item in items:
        if item.get_closest_marker("gpu") is None:
            continue
        if reason is None:
            reason = _gpu_reason() or ""
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
