"""Under ``fastmath`` a reciprocal square root ``1.0 / np.sqrt(x)`` becomes ``MATH rsqrt``:
the simulator's kernel (plain Python for the device's ``rsqrtf``) and the CPU backends give
``1/sqrt(x)`` within the few ulps fastmath allows; without fastmath, CPython's values."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import offload as ol

pytestmark = pytest.mark.sim

xs = np.linspace(0.25, 1.0e6, 257).astype(np.float32)


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


@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p, ol.compute_g])
def test_reciprocal_square_root_under_fastmath_is_within_a_few_ulps(compute: Any, fastmath: None):
    got = np.asarray(compute((len(xs),), inverse_norm))
    want = _python()
    assert got.dtype == np.float32
    ulps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    assert ulps.max() <= 4


@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p, ol.compute_g])
def test_without_fastmath_the_values_are_cpythons(compute: Any):
    np.testing.assert_array_equal(np.asarray(compute((len(xs),), inverse_norm)), _python())
