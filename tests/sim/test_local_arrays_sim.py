"""The local-array programs of ``tests/frontend/test_local_arrays.py`` on compute_g under
the simulator (``cuda.local.array``), and a bounds-checked out-of-range local index."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import offload as ol
from tests.frontend.test_local_arrays import IDS, PROGRAMS, N, assert_matches

pytestmark = pytest.mark.sim


@pytest.mark.parametrize("fn", PROGRAMS, ids=IDS)
def test_local_array_program_matches_cpython_on_the_simulator(fn: Any) -> None:
    assert_matches(fn, ol.compute_g((N,), fn))


def test_an_out_of_bounds_local_index_is_reported_with_bounds_checks_on_the_simulator() -> None:
    def f(i: int) -> Any:
        t = np.zeros(3)
        t[i] = 1.0
        return t[0]

    ol.config.bounds_check = True
    try:
        with pytest.raises(IndexError, match="local array"):
            ol.compute_g((5,), f)
        np.testing.assert_array_equal(ol.compute_g((3,), f), [1.0, 0.0, 0.0])
    finally:
        ol.config.bounds_check = False
