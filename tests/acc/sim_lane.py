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
