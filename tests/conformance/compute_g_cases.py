"""The compute_g conformance cases, shared by the sim lane (tests/sim) and the gpu lane
(tests/gpu); each lane's module sets its marker and the backend fixture."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import offload as ol
from tests.conformance import programs as P
from tests.corpus.valid import PROGRAMS, assert_results_match, reference


def _host(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


def _as_tuple(r):
    return list(r) if isinstance(r, tuple) else [r]


@pytest.mark.parametrize("name", sorted(P.CASES))
def test_compute_g_matches_cpython_on_drawn_inputs(name):
    case = P.CASES[name]

    @settings(max_examples=8, deadline=None)
    @given(arrays=case.draw)
    def check(arrays):
        P.load(arrays)
        got = [_host(g) for g in _as_tuple(ol.compute_g(P.N, case.fn))]
        want = P.reference(case.fn, [g.dtype for g in got])
        for k, w in enumerate(want):
            P.assert_close(got[k], w, case.ulps, f"compute_g result {k}")

    check()


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_compute_g_runs_the_whole_corpus(program):
    got = ol.compute_g(program.shape, program.fn)
    got_t = tuple(_host(g) for g in (got if isinstance(got, tuple) else (got,)))
    assert_results_match(program, got_t)
    want = reference(program)
    assert len(want) == len(got_t)


def test_compute_g_fuses_a_delayed_chain():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    chain = ol.map(lambda x: x * 2, ol.backpermute((4, 3), lambda i, j: (j, i), a))
    np.testing.assert_array_equal(_host(ol.compute_g(chain)), a.T * 2)


def test_compute_g_writes_a_plain_or_strided_host_out_array():
    out = np.full(6, -1.0)
    res = ol.compute_g(6, lambda i: i * 0.5, out=out)
    assert res is out
    np.testing.assert_array_equal(out, np.arange(6) * 0.5)
    strided = np.zeros((4, 6), dtype=np.float32)[:, ::2]
    ol.compute_g((4, 3), lambda i, j: np.float32(i * 10 + j), out=strided)
    np.testing.assert_array_equal(strided, np.add.outer(np.arange(4) * 10, np.arange(3)))


def test_compute_g_out_overlapping_a_captured_array_gets_cpythons_values():
    # out= is what the function reads (a compute_g result: managed, CuPy or, in the sim,
    # NumPy): each f(i) must see the values from before the call, on warm calls too.
    for _ in range(2):
        a = ol.compute_g(16, lambda i: i * 1.5 - 4)
        host = _host(a).copy()

        def rotate(i):
            return a[(i + 1) % 16] * 10.0 + a[(i + 15) % 16]

        want = np.array([host[(i + 1) % 16] * 10.0 + host[(i + 15) % 16] for i in range(16)])
        assert ol.compute_g(16, rotate, out=a) is a
        np.testing.assert_array_equal(_host(a), want)

        b = ol.compute_g(16, lambda i: i * 0.5)
        before = _host(b).copy()

        def ahead(i):
            return b[i + 2] - b[i]

        ol.compute_g(14, ahead, out=b[:14])  # a view overlapping what it reads
        np.testing.assert_array_equal(_host(b)[:14], before[2:] - before[:14])
