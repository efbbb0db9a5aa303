"""compute_g on a real GPU, through the public API, in both memory modes, against CPython."""

from __future__ import annotations

import pytest

import offload as ol
from tests.conformance.compute_g_cases import *  # noqa: F403  (the shared test cases)

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True, params=["unified", "device"])
def _memory_mode(request):
    saved = ol.config.memory, ol.config.gpu_simulator
    ol.config.memory, ol.config.gpu_simulator = request.param, False
    yield
    ol.config.memory, ol.config.gpu_simulator = saved
