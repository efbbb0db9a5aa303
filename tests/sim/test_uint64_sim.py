"""The 64-bit hash finalisers of ``tests/frontend/test_uint64.py`` on compute_g under the
simulator: NumPy's bits, uint64 result."""

from __future__ import annotations

from typing import Any

import pytest

import offload as ol
from tests.frontend.test_uint64 import HASHES, IDS, N, assert_bits

pytestmark = pytest.mark.sim


@pytest.mark.parametrize("case", HASHES, ids=IDS)
def test_hash_finaliser_matches_numpy_on_the_simulator(case: Any) -> None:
    _, fn, want = case
    assert_bits(ol.compute_g((N,), fn), want)
