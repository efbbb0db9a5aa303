"""The sim lane needs NUMBA_ENABLE_CUDASIM=1 *before numba is imported*: run it on its own,

    NUMBA_ENABLE_CUDASIM=1 python -m pytest -m sim tests/sim

In a process where numba.cuda already runs for real (or for PTX only) the lane is skipped
with that instruction, rather than run against the wrong numba.
"""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    import numba

    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and numba.config.ENABLE_CUDASIM:
        return
    skip = pytest.mark.skip(
        reason="sim lane: run separately with "
        "NUMBA_ENABLE_CUDASIM=1 python -m pytest -m sim tests/sim"
    )
    for item in items:
        if "tests/sim/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(skip)
