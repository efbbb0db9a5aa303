"""Empty, size-1 and ragged shapes: CPython, the interpreter, compute_s and compute_p agree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import offload as ol
from offload.frontend.lower import fetch_captures
from offload.ir import interp
from offload.lowering import check_and_lower

pytestmark = pytest.mark.cpu


def mixed(i, j):
    x = (i - 2 * j) // 3 + (i * j) % 5
    return x, x * 0.5 if j % 2 == 0 else -1.5


def _cpython(shape):
    re = np.empty(shape, dtype=np.int64)
    im = np.empty(shape, dtype=np.float64)
    for idx in np.ndindex(*shape):
        re[idx], im[idx] = mixed(*idx)
    return re, im


@settings(max_examples=20, deadline=None)
@given(st.tuples(st.sampled_from([0, 1, 2, 7]), st.sampled_from([0, 1, 3, 64])))
def test_every_backend_agrees_on_small_and_empty_shapes(shape):
    want = _cpython(shape)
    lowered = check_and_lower(mixed, 2)
    got_i = interp.compute(lowered.ir, shape, fetch_captures(mixed, lowered))
    for got in (got_i, ol.compute_s(shape, mixed), ol.compute_p(shape, mixed)):
        assert [g.shape for g in got] == [shape, shape]
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
