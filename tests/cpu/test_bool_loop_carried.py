"""A bool carried around a loop and tested in it (``found = found or v > t``): range
analysis once recursed without end through the loop's bool argument (its facts on each
edge asked for the argument's facts again); now its depth is bounded. CPython's values on
both CPU backends."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol

pytestmark = pytest.mark.cpu

starts = np.array([0, 0, 3, 7, 7], dtype=np.int64)
vals = np.array([0.5, 2.0, -1.0, 3.0, 0.0, 1.5, -2.0, 4.0], dtype=np.float32)


def any_large(i):
    found = False
    m = np.float32(-np.inf)
    for k in range(starts[i], starts[i + 1] if i + 1 < len(starts) else len(vals)):
        found = found or vals[k] > 1.0
        if not found:
            m = max(m, vals[k])
    return found, m


@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p], ids=["s", "p"])
def test_a_bool_tested_in_its_own_loop(compute):
    got_found, got_max = compute(len(starts), any_large)
    want = [any_large(i) for i in range(len(starts))]
    assert got_found.tolist() == [w[0] for w in want]
    np.testing.assert_array_equal(got_max, np.array([w[1] for w in want], dtype=np.float32))
