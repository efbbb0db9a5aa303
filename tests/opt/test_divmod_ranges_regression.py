"""Range facts inside a short-circuit loop test (found by the ports' julia set on the
merged compiler, 2026-11-25): a memo of ``_narrow_arg`` answers kept across a change of a
loop argument's range made ``it < 50`` always true inside ``while z < 400 and it < 50``,
so the loop ran past 50 iterations."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol

pytestmark = pytest.mark.cpu


def bounded_escape(i):
    z = i * 0.5
    it = 0
    while z < 400 and it < 50:
        z = z * 1.01 + 1
        it += 1
    return it


def nested_tests(i):
    a = 0
    b = 0
    while (a < 30 and b < 7) or (i > 100 and a < 3):
        a += 1
        if a % 5 == 0:
            b += 1
    return a * 100 + b


@pytest.mark.parametrize("fn", [bounded_escape, nested_tests])
@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p])
def test_short_circuit_loop_bounds_keep_their_meaning(fn, compute):
    want = np.array([fn(i) for i in range(200)])
    np.testing.assert_array_equal(compute(200, fn), want)
