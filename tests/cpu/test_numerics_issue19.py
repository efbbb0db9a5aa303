"""Issue 19's numerics on compute_s/compute_p: int64 wrap-around (no LLVM ``nsw``), sign of
-0.0, abs of a bool, a 0-d capture under cpu-par, out-of-range float -> int casts; each
case failed before its fix (wrong value or an internal error)."""

from __future__ import annotations

from typing import Any

import pytest

import offload as ol
from tests.conformance.numerics_cases import ALL_CASES, Case, assert_same

pytestmark = pytest.mark.cpu


@pytest.mark.parametrize("target", ["compute_s", "compute_p"])
@pytest.mark.parametrize("case", ALL_CASES, ids=[c[0] for c in ALL_CASES])
def test_cpu_targets_give_numpys_value_and_dtype(case: Case, target: str) -> None:
    _, shape, fn, expected = case
    compute: Any = getattr(ol, target)
    assert_same(compute(shape, fn), expected)
