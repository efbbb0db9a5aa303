"""A closure made per call -- ``scatter``'s index reader, a lambda in a loop, a streamed
chunk's shifted index function -- reuses its code's lowering (``combine.closure_kinds``)
and reads its own captures; a closure over another helper function or over values of
another kind, or a rebound global helper, is lowered again. Values are checked on
``compute_s``/``compute_p`` against NumPy; lowerings counted through ``check_and_lower``."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import offload as ol
from offload.acc import combine

pytestmark = pytest.mark.cpu

HERE = sys.modules[__name__]


@pytest.fixture
def lowerings(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    seen: list[object] = []
    real = combine.check_and_lower

    def counted(target: Any, rank: int) -> Any:
        seen.append(target)
        return real(target, rank)

    monkeypatch.setattr(combine, "check_and_lower", counted)
    return seen


@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p])
def test_scatter_lowers_its_index_reader_once(compute: Any, lowerings: list[object]) -> None:
    rng = np.random.default_rng(3)
    for n in (50, 50, 50, 70):
        to = rng.integers(0, 9, n)
        a = rng.random(n)
        got = compute(ol.scatter(to, np.zeros(9), a))
        want = np.zeros(9)
        want[to] = a  # (NumPy's fancy assignment: the last write wins, as scatter's)
        np.testing.assert_array_equal(got, want)
    ix_lowerings = [t for t in lowerings if getattr(t, "__name__", "") == "ix"]
    assert len(ix_lowerings) <= 1  # (none if an earlier test lowered it; not one a call)


def test_a_lambda_made_per_call_reads_its_own_defaults_and_captures(
    lowerings: list[object],
) -> None:
    x = np.arange(1.0, 9.0)
    for k in (1.0, 2.0, -3.0, 0.5):
        got = ol.compute_s(ol.scanl1(lambda a, b, k=k: a + b * k, x))
        want = np.empty_like(x)
        acc = x[0]
        want[0] = acc
        for j in range(1, len(x)):
            acc = acc + x[j] * k
            want[j] = acc
        np.testing.assert_array_equal(got, want)
    # (a default is a constant of the lowering, as for an element function: one each)
    n_first = len(lowerings)
    for k in (4.0, 5.0):
        scale = k

        def comb(a: Any, b: Any) -> Any:
            return a + b * scale  # (a closure cell, new each time round)

        got = ol.compute_s(ol.fold_all(comb, 0.0, x))
        assert float(got) == float(np.sum(x * k))
    assert len(lowerings) - n_first <= 1  # the closure's code lowered once


def _double(v: Any) -> Any:
    return v * 2.0


def _negate(v: Any) -> Any:
    return -v


def _over(helper: Any) -> Any:
    def comb(a: Any, b: Any) -> Any:
        return helper(a) + helper(b)

    return comb


def test_a_closure_over_another_helper_or_kind_is_lowered_again() -> None:
    x = np.arange(1.0, 6.0)
    doubled = ol.compute_s(ol.scanl1(_over(_double), x))
    negated = ol.compute_s(ol.scanl1(_over(_negate), x))
    assert doubled[1] == 2.0 * 1.0 + 2.0 * 2.0  # (scanl1: x0, then f(x0, x1))
    assert negated[1] == -1.0 + -2.0
    xi = np.arange(1, 6, dtype=np.int64)

    def shift(off: Any) -> Any:
        return lambda i: xi[i] * 0 + off  # (the capture's kind decides the index dtype)

    got_i = ol.compute_s(ol.permute(lambda a, b: a + b, np.zeros(3), shift(1), x))
    assert got_i.tolist() == [0.0, float(x.sum()), 0.0]
    got_b = ol.compute_s(ol.permute(lambda a, b: a + b, np.zeros(3), shift(2), x))
    assert got_b.tolist() == [0.0, 0.0, float(x.sum())]


def _helper(v: Any) -> Any:
    return v + 1.0


def _uses_global(a: Any, b: Any) -> Any:
    return _helper(a) + b


def test_a_rebound_global_helper_is_lowered_again(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.ones(4)
    before = ol.compute_s(ol.scanl1(_uses_global, x))
    monkeypatch.setattr(HERE, "_helper", lambda v: v - 1.0)
    after = ol.compute_s(ol.scanl1(_uses_global, x))
    assert before.tolist() == [1.0, 3.0, 5.0, 7.0]
    assert after.tolist() == [1.0, 1.0, 1.0, 1.0]
