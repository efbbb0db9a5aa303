"""What the streamed-collective tests share: the target each test runs on, and a result's
bits."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import offload as ol


@pytest.fixture(autouse=True)
def sim_or_gpu(request: Any) -> Any:
    """The simulator for the ``sim`` tests, the GPU for the ``gpu`` ones; no limit (a
    module that imports this fixture gets it for every test)."""
    saved = (ol.config.gpu_simulator, ol.config.device_memory_limit)
    ol.config.gpu_simulator = request.node.get_closest_marker("gpu") is None
    ol.config.device_memory_limit = None
    yield
    ol.config.gpu_simulator, ol.config.device_memory_limit = saved


def bits(result: Any) -> list[tuple[Any, ...]]:
    """Dtype, shape and bytes of each part of a result (CuPy arrays copied to the host)."""
    parts = result if isinstance(result, tuple) else (result,)
    hosts = [np.asarray(r.get() if hasattr(r, "get") else r) for r in parts]
    return [(h.dtype, h.shape, h.tobytes()) for h in hosts]
