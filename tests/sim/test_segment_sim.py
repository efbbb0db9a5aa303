"""Loops over a range that depends on the element, under the simulator
(``tests/conformance/segment_cases.py``)."""

from __future__ import annotations

import pytest

from tests.conformance import segment_cases as cases
from tests.conformance.segment_cases import fresh  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.sim, pytest.mark.usefixtures("fresh")]


@pytest.mark.parametrize("fn_name", sorted(cases.CASES))
def test_segment_loop(fn_name: str) -> None:
    cases.check_case(fn_name, "gpu-sim")
