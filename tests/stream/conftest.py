"""Streaming tests: the ``unit`` ones run anywhere; the ``sim`` ones need
NUMBA_ENABLE_CUDASIM=1 before numba is imported (as tests/sim) and are skipped otherwise;
the ``gpu`` ones need CuPy and a CUDA device (as tests/gpu)."""

from __future__ import annotations

import os
from typing import Any

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
    import numba

    sim = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and numba.config.ENABLE_CUDASIM
    skip_sim = pytest.mark.skip(
        reason="sim lane: run with NUMBA_ENABLE_CUDASIM=1 python -m pytest -m sim tests/stream"
    )
    gpu_reason: str | None = None
    for item in items:
        path = str(item.fspath).replace(os.sep, "/")
        if "tests/stream/" not in path:
            continue
        if item.get_closest_marker("sim") is not None and not sim:
            item.add_marker(skip_sim)
        if item.get_closest_marker("gpu") is not None:
            if gpu_reason is None:
                gpu_reason = "gpu lane: the simulator is on" if sim else _gpu_reason() or ""
            if gpu_reason:
                item.add_marker(pytest.mark.skip(reason=gpu_reason))


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kinds of the parts streamed (``offload.stream.trees.run`` calls), in order."""
    from offload.stream import trees

    kinds: list[str] = []
    run = trees.run

    def counted(st: Any, *args: Any) -> Any:
        kinds.append(type(st).__name__)
        return run(st, *args)

    monkeypatch.setattr(trees, "run", counted)
    return kinds
