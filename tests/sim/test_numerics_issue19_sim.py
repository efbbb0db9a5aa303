"""Issue 19's numerics on compute_g under the simulator (the same cases as the CPU's)."""

from __future__ import annotations

import pytest

import offload as ol
from tests.conformance.numerics_cases import ALL_CASES, Case, assert_same

pytestmark = pytest.mark.sim


@pytest.mark.parametrize("case", ALL_CASES, ids=[c[0] for c in ALL_CASES])
def test_simulator_gives_numpys_value_and_dtype(case: Case) -> None:
    _, shape, fn, expected = case
    assert_same(ol.compute_g(shape, fn), expected)
