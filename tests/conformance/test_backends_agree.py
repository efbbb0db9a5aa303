"""CPython, the IR interpreter, compute_s and compute_p agree on Hypothesis-drawn inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import offload as ol
from offload.frontend.lower import fetch_captures
from offload.ir import interp
from offload.lowering import check_and_lower

from . import programs as P

pytestmark = pytest.mark.cpu


def _as_tuple(r):
    return list(r) if isinstance(r, tuple) else [r]


@pytest.mark.parametrize("name", sorted(P.CASES))
def test_every_backend_matches_cpython(name):
    case = P.CASES[name]
    lowered = check_and_lower(case.fn, 1)

    @settings(max_examples=25, deadline=None)
    @given(arrays=case.draw)
    def check(arrays):
        P.load(arrays)
        got_s = _as_tuple(ol.compute_s(P.N, case.fn))
        dtypes = [g.dtype for g in got_s]
        want = P.reference(case.fn, dtypes)
        got_i = interp.compute(lowered.ir, (P.N,), fetch_captures(case.fn, lowered))
        got_p = _as_tuple(ol.compute_p(P.N, case.fn))
        for k, w in enumerate(want):
            P.assert_close(got_i[k], w, case.ulps, f"interp result {k}")
            P.assert_close(got_s[k], w, case.ulps, f"compute_s result {k}")
            P.assert_close(got_p[k], w, case.ulps, f"compute_p result {k}")

    check()


def test_drawn_scalars_reach_the_kernel_without_recompiling():
    def scaled(i):
        return P.I64[i] * factor

    @settings(max_examples=20, deadline=None)
    @given(st.integers(-(2**31), 2**31))
    def check(value):
        global factor
        factor = value
        np.testing.assert_array_equal(ol.compute_s(P.N, scaled), P.I64 * value)

    check()


factor = 1
