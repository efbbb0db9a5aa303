"""The scalar library of ``tests/frontend/test_scalar_library.py`` on compute_g under the
simulator: NumPy's and CPython's values and dtypes."""

from __future__ import annotations

import pytest

import offload as ol
from tests.frontend.test_scalar_library import (
    GROUPS,
    POLES,
    assert_library,
    assert_poles,
    gamma_poles,
)

pytestmark = pytest.mark.sim


@pytest.mark.parametrize("group", list(GROUPS))
def test_scalar_library_matches_numpy_on_the_simulator(group: str) -> None:
    _, fn, n = GROUPS[group]
    assert_library(group, ol.compute_g((n,), fn))


def test_gamma_at_its_poles_is_c_tgamma_on_the_simulator() -> None:
    assert_poles(ol.compute_g((len(POLES),), gamma_poles))
