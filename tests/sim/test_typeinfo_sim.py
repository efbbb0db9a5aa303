"""``np.finfo``/``np.iinfo`` (``tests/frontend/test_typeinfo.py``) on compute_g under the
simulator: NumPy's values and dtypes."""

from __future__ import annotations

from typing import Any

import pytest

import offload as ol
from tests.frontend.test_typeinfo import CASES, N, check

pytestmark = pytest.mark.sim


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_type_limits_match_numpy_on_the_simulator(fn: Any) -> None:
    check(fn, ol.compute_g(N, fn))
