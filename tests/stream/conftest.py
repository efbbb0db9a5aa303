"""Streaming tests: the ``unit`` ones run anywhere; the ``sim`` ones need
NUMBA_ENABLE_CUDASIM=1 before numba is imported (as tests/sim) and are skipped otherwise."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    import numba

    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and numba.config.ENABLE_CUDASIM:
        return
    skip = pytest.mark.skip(
        reason="sim lane: run with NUMBA_ENABLE_CUDASIM=1 python -m pytest -m sim tests/stream"
    )
    for item in items:
        path = str(item.fspath).replace(os.sep, "/")
        if "tests/stream/" in path and item.get_closest_marker("sim") is not None:
            item.add_marker(skip)
