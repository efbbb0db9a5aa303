"""Under ``fastmath`` a reciprocal square root ``1.0 / np.sqrt(x)`` becomes ``MATH rsqrt``:
the simulator's kernel (plain Python for the device's ``rsqrtf``) and the CPU backends give
``1/sqrt(x)`` within the few ulps fastmath allows; without fastmath, CPython's values
(``tests/conformance/fastmath_cases.py``)."""

from __future__ import annotations

from typing import Any

import pytest

import offload as ol
from tests.conformance.fastmath_cases import assert_exact, assert_within_a_few_ulps, fastmath

pytestmark = pytest.mark.sim
__all__ = ["fastmath"]  # the fixture


@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p, ol.compute_g])
def test_reciprocal_square_root_under_fastmath_is_within_a_few_ulps(compute: Any, fastmath: None):
    assert_within_a_few_ulps(compute)


@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p, ol.compute_g])
def test_without_fastmath_the_values_are_cpythons(compute: Any):
    assert_exact(compute)
