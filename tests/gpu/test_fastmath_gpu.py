"""Under ``fastmath`` on a real GPU, ``1.0 / np.sqrt(x)`` runs as libdevice's ``rsqrtf`` (one
``rsqrt.approx``): within a few ulps of CPython's value, and exact without fastmath
(``tests/conformance/fastmath_cases.py``)."""

from __future__ import annotations

import pytest

import offload as ol
from tests.conformance.fastmath_cases import assert_exact, assert_within_a_few_ulps, fastmath

pytestmark = pytest.mark.gpu
__all__ = ["fastmath"]  # the fixture


def test_rsqrt_under_fastmath_is_within_a_few_ulps(fastmath: None) -> None:
    assert_within_a_few_ulps(ol.compute_g)


def test_without_fastmath_the_values_are_cpythons() -> None:
    assert_exact(ol.compute_g)
