"""Under ``fastmath`` on a real GPU, ``1.0 / np.sqrt(x)`` runs as libdevice's ``rsqrtf`` (one
``rsqrt.approx``): within a few ulps of CPython's value, and exact without fastmath."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import offload as ol

pytestmark = pytest.mark.gpu

xs = np.linspace(0.25, 1.0e6, 4097).astype(np.float32)


def inverse_norm(i: int) -> Any:
    return 1.0 / np.sqrt(xs[i] * xs[i] + np.float32(1.0))


@pytest.fixture
def fastmath() -> Iterator[None]:
    saved = ol.config.fastmath
    ol.config.fastmath = True
    yield
    ol.config.fastmath = saved


def _python() -> np.ndarray[Any, Any]:
    return np.array([inverse_norm(i) for i in range(len(xs))], dtype=np.float32)


def test_rsqrt_under_fastmath_is_within_a_few_ulps(fastmath: None) -> None:
    got = np.asarray(ol.compute_g((len(xs),), inverse_norm))
    want = _python()
    ulps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    assert ulps.max() <= 4


def test_without_fastmath_the_values_are_cpythons() -> None:
    np.testing.assert_array_equal(np.asarray(ol.compute_g((len(xs),), inverse_norm)), _python())
