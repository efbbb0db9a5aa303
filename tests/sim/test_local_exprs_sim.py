"""The local-array expression programs of ``tests/frontend/test_local_exprs.py`` on
compute_g under the simulator (``cuda.local.array``)."""

from __future__ import annotations

from typing import Any

import pytest

import offload as ol
from tests.frontend.test_local_exprs import IDS, PROGRAMS, N, assert_matches

pytestmark = pytest.mark.sim


@pytest.mark.parametrize("fn", PROGRAMS, ids=IDS)
def test_local_array_expression_matches_cpython_on_the_simulator(fn: Any) -> None:
    assert_matches(fn, ol.compute_g((N,), fn))
