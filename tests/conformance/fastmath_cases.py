"""The fastmath reciprocal-square-root cases, shared by the sim lane (tests/sim) and the
gpu lane (tests/gpu): under ``fastmath`` ``1.0 / np.sqrt(x)`` runs as ``MATH rsqrt`` (the
device's ``rsqrtf``, or its simulator stand-in), within a few ulps of CPython's value;
without it, CPython's value exactly."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import offload as ol

xs = np.linspace(0.25, 1.0e6, 1025).astype(np.float32)


def inverse_norm(i: int) -> Any:
    return 1.0 / np.sqrt(xs[i] * xs[i] + np.float32(1.0))


@pytest.fixture
def fastmath() -> Iterator[None]:
    saved = ol.config.fastmath
    ol.config.fastmath = True
    yield
    ol.config.fastmath = saved


def python_values() -> np.ndarray[Any, Any]:
    return np.array([inverse_norm(i) for i in range(len(xs))], dtype=np.float32)


def assert_within_a_few_ulps(compute: Any) -> None:
    got = np.asarray(compute((len(xs),), inverse_norm))
    want = python_values()
    assert got.dtype == np.float32
    ulps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    assert ulps.max() <= 4


def assert_exact(compute: Any) -> None:
    np.testing.assert_array_equal(np.asarray(compute((len(xs),), inverse_norm)), python_values())
