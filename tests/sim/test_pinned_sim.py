"""compute_g specialised on small frozen arrays, under the simulator
(``tests/conformance/pinned_cases.py``)."""

from __future__ import annotations

import pytest

from tests.conformance import pinned_cases as cases
from tests.conformance.pinned_cases import fresh  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.sim, pytest.mark.usefixtures("fresh")]


@pytest.mark.parametrize("check", cases.CHECKS)
def test_pinned(check: str) -> None:
    getattr(cases, f"check_{check}")("gpu-sim")
