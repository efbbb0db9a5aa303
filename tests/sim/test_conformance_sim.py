"""compute_g under numba's CUDA simulator, through the public API, against CPython."""

from __future__ import annotations

import pytest

import offload as ol
from tests.conformance.compute_g_cases import *  # noqa: F403  (the shared test cases)

pytestmark = pytest.mark.sim


@pytest.fixture(autouse=True)
def _simulator():
    saved = ol.config.gpu_simulator
    ol.config.gpu_simulator = True
    yield
    ol.config.gpu_simulator = saved
