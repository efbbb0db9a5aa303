"""Hoisting on every target (offload/opt/hoist.py, offload/hoisted.py): the prologue runs
once per call on the target itself, before the elements, and the results are the
original's -- on compute_s/compute_p (cpu lane), the CUDA simulator (sim lane) and the GPU
(gpu lane). Lives with the ports for their lane set-up (tests/ports/conftest.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import offload as ol
from offload import warm_lane
from offload.hoisted import HoistedKernel

a = np.linspace(-1.0, 1.0, 48).reshape(6, 8)
s = 0.75


def go_fast(i, j):
    trace = 0.0
    for k in range(a.shape[0]):
        trace += np.tanh(a[k, k])
    return a[i, j] + trace


def go_fast_original():
    trace = 0.0
    for k in range(a.shape[0]):
        trace += np.tanh(a[k, k])
    return a + trace


def scaled(i, j):
    return a[i, j] * math.exp(s) + math.log1p(s)


def two_loops_and_a_branch(i, j):
    lo = a[0, 0]
    for k in range(a.shape[0]):
        lo = min(lo, a[k, 1])
    hi = 0.0
    for k in range(a.shape[1]):
        hi = max(hi, np.sin(a[1, k]))
    if a[i, j] > 0:
        return a[i, j] - lo
    return a[i, j] * hi


CASES = [go_fast, scaled, two_loops_and_a_branch]


def _want(fn):
    return np.array([fn(i, j) for i in range(6) for j in range(8)]).reshape(6, 8)


def _kernel(fn) -> object:
    return warm_lane.LANES[id(fn.__code__)].kernel


def _assert_close(got, want, fn) -> None:
    got = got.get() if hasattr(got, "get") and not isinstance(got, np.ndarray) else got
    assert got.dtype == want.dtype
    # tanh/sin/exp/log1p: the target's libm/libdevice may differ from NumPy's by an ulp,
    # which a sum near zero turns into a large relative error: an absolute bound.
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)


@pytest.mark.cpu
@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p], ids=["s", "p"])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_hoisted_kernel_gives_the_originals_values_on_cpu(fn, compute):
    _assert_close(compute((6, 8), fn), _want(fn), fn)
    assert isinstance(_kernel(fn), HoistedKernel)


@pytest.mark.cpu
@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p], ids=["s", "p"])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_hoisting_changes_no_bit_of_the_result(fn, compute):
    hoisted = compute((6, 8), fn)
    ol.config.disabled_passes = frozenset({"hoist"})
    try:
        plain = compute((6, 8), fn)
        assert not isinstance(_kernel(fn), HoistedKernel)
    finally:
        ol.config.disabled_passes = frozenset()
    np.testing.assert_array_equal(hoisted, plain, strict=True)


@pytest.mark.cpu
@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p], ids=["s", "p"])
def test_prologue_runs_once_per_call_and_the_elements_once_each(compute, monkeypatch):
    compute((6, 8), go_fast)
    kernel = _kernel(go_fast)
    assert isinstance(kernel, HoistedKernel)
    calls: list[tuple[str, tuple[int, ...]]] = []
    first, main = kernel.prologue.launch, kernel.main.launch
    monkeypatch.setattr(
        kernel.prologue, "launch", lambda sh, o, c: (calls.append(("p", sh)), first(sh, o, c))
    )
    monkeypatch.setattr(
        kernel.main, "launch", lambda sh, o, c: (calls.append(("m", sh)), main(sh, o, c))
    )
    compute((6, 8), go_fast)
    compute((6, 8), go_fast)
    assert calls == [("p", (1,)), ("m", (6, 8))] * 2
    calls.clear()
    compute((0, 8), go_fast)
    assert calls == []  # no element, no prologue


@pytest.mark.cpu
def test_a_changed_captured_array_is_not_stale_in_the_prologue():
    global a
    keep = a
    try:
        np.testing.assert_allclose(
            ol.compute_s((6, 8), go_fast), go_fast_original(), rtol=1e-15, atol=1e-15
        )
        a = keep[::-1].copy()
        np.testing.assert_allclose(
            ol.compute_s((6, 8), go_fast), go_fast_original(), rtol=1e-15, atol=1e-15
        )
        a = keep.copy()
        a[2, 2] = 5.0  # same array object type, new diagonal
        np.testing.assert_allclose(
            ol.compute_p((6, 8), go_fast), go_fast_original(), rtol=1e-15, atol=1e-15
        )
    finally:
        a = keep


@pytest.mark.cpu
def test_explain_shows_the_hoisted_prologue(capsys):
    text = ol.explain(go_fast, (6, 8), target="cpu")
    assert "== IR after hoist" in text
    after = text.split("== IR after hoist", 1)[1]
    assert "func @go_fast.prologue(" in after and 'capture "hoisted trace"' in after


@pytest.mark.cpu
def test_bounds_check_keeps_the_reads_in_the_element_function():
    ol.config.bounds_check = True
    try:
        text = ol.explain(go_fast, (6, 8), target="cpu-seq")
        np.testing.assert_allclose(
            ol.compute_s((6, 8), go_fast), go_fast_original(), rtol=1e-15, atol=1e-15
        )
    finally:
        ol.config.bounds_check = False
    assert "prologue" not in text


@pytest.mark.sim
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_hoisted_kernel_gives_the_originals_values_on_the_simulator(fn):
    _assert_close(ol.compute_g((6, 8), fn), _want(fn), fn)
    assert isinstance(_kernel(fn), HoistedKernel)


@pytest.mark.gpu
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_hoisted_kernel_gives_the_originals_values_on_the_gpu(fn):
    _assert_close(ol.compute_g((6, 8), fn), _want(fn), fn)
    assert isinstance(_kernel(fn), HoistedKernel)
