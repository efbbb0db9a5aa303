"""Blocks on windows (offload.stream.window): the windowed IR computed block by block on the
read windows equals the whole function, on the IR interpreter; windows are tight."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload.driver import specialise
from offload.frontend.lower import fetch_captures
from offload.ir.interp import compute
from offload.lowering import check_and_lower
from offload.options import CompileOptions
from offload.stream.plan import DoesNotFit, plan_chunks
from offload.stream.window import GridWindows, ReadWindows, cut, integer_scalars, windowed

pytestmark = pytest.mark.unit

RNG = np.random.default_rng(7)
X = RNG.random(23)
M = RNG.random((11, 7))
P = RNG.integers(0, 23, 23)
N = 23


def stencil(i):
    if 0 < i < N - 1:
        return X[i - 1] + 2.0 * X[i] + X[i + 1]
    return X[i]


def clamped(i):
    return X[max(i - 2, 0)] * X[min(i + 3, len(X) - 1)]


def wraps(i):
    return X[i - 1] - X[i]  # X[-1] at i == 0: Python's meaning


def gathered(i):
    return X[P[i]]


def rows2d(i, j):
    s = 0.0
    for k in range(M.shape[1]):
        s += M[i, k]
    return s * M[i, j] + (M[i + 1, j] if i + 1 < M.shape[0] else 0.0)


def shifted2d(i, j):
    return M[i, (j + 1) % M.shape[1]] - M[(i + 2) % M.shape[0], j], i * 10 + j


def _prepared(fn: Any, rank: int) -> tuple[Any, list[Any]]:
    low = check_and_lower(fn, rank)
    return specialise(low, None, CompileOptions(verify=True)), fetch_captures(fn, low)


def _blocked(fn: Any, shape: tuple[int, ...], cuts: list[list[int]]) -> list[np.ndarray]:
    """``fn`` computed block by block (``cuts``: block boundaries per axis) on windows."""
    ir, values = _prepared(fn, len(shape))
    wf = windowed(ir)
    extents = {k: values[k].shape for k in wf.arrays}
    reads = ReadWindows(ir, extents)
    outs = [np.zeros(shape, t.dtype) for t in ir.result_types]
    grid = [list(zip(c[:-1], c[1:], strict=True)) for c in cuts]
    for block in np.ndindex(*(len(g) for g in grid)):
        bounds = tuple(g[b] for g, b in zip(grid, block, strict=True))
        wins, _ = reads.of(bounds)
        cut_values = [cut(v, wins[k]) if k in wins else v for k, v in enumerate(values)]
        bshape = tuple(hi - lo for lo, hi in bounds)
        got = compute(wf.fn, bshape, wf.values(cut_values, bounds, wins, extents))
        for out, g in zip(outs, got, strict=True):
            out[tuple(slice(lo, hi) for lo, hi in bounds)] = g
    return outs


@pytest.mark.parametrize(
    ("fn", "shape", "cuts"),
    [
        (stencil, (23,), [[0, 5, 6, 17, 23]]),
        (clamped, (23,), [[0, 1, 12, 23]]),
        (wraps, (23,), [[0, 4, 9, 23]]),
        (gathered, (23,), [[0, 10, 23]]),
        (rows2d, (11, 7), [[0, 3, 4, 11], [0, 7]]),
        (shifted2d, (11, 7), [[0, 5, 11], [0, 2, 7]]),
    ],
)
def test_blocks_on_read_windows_equal_the_whole_function(fn, shape, cuts):
    ir, values = _prepared(fn, len(shape))
    want = compute(ir, shape, values)
    got = _blocked(fn, shape, cuts)
    for w, g in zip(want, got, strict=True):
        assert w.tobytes() == g.tobytes()


def test_offset_reads_get_a_window_with_their_halo():
    ir, values = _prepared(stencil, 1)
    k = next(k for k, v in enumerate(values) if v is X)
    reads = ReadWindows(ir, {k: X.shape})
    assert reads.of(((5, 10),))[0][k] == ((4, 11),)
    assert reads.of(((0, 4),))[0][k] == ((0, 5),)  # no halo before row 0
    assert reads.of(((20, 23),))[0][k] == ((19, 23),)  # nor after the last


def _clamped_at(n):
    def clamped_at(i):
        return X[min(i + 1, n - 1)] - X[max(i - 2, 0)]

    return clamped_at


def test_captured_integers_are_constants_of_the_call_the_windows_are_for():
    """``n`` is a capture (a new ``n`` compiles nothing again): unknown, ``min(i + 1, n -
    1)`` is not bounded below; given the call's value, the window is the block's halo."""
    ir, values = _prepared(_clamped_at(23), 1)
    k = next(k for k, v in enumerate(values) if v is X)
    scalars = integer_scalars(values)
    assert list(scalars.values()) == [23]
    assert ReadWindows(ir, {k: X.shape}).of(((12, 15),))[0][k][0][0] == 0
    assert ReadWindows(ir, {k: X.shape}, scalars).of(((12, 15),))[0][k] == ((10, 16),)


def test_a_gather_is_unbounded_and_reads_the_whole_array():
    ir, values = _prepared(gathered, 1)
    kx = next(k for k, v in enumerate(values) if v is X)
    kp = next(k for k, v in enumerate(values) if v is P)
    reads = ReadWindows(ir, {kx: X.shape, kp: P.shape})
    wins, unbounded = reads.of(((3, 6),))
    assert wins[kp] == ((3, 6),)
    assert wins[kx] == ((0, 23),)
    assert [(u.capture, u.axis) for u in unbounded] == [(kx, 0)]
    assert unbounded[0].span is not None and "X[P[i]]" in unbounded[0].span.text


def _plan(fn, shape, budget, rank=1):
    ir, values = _prepared(fn, rank)
    extents = {k: v.shape for k, v in enumerate(values) if isinstance(v, np.ndarray)}
    host = sorted(extents)
    dtypes = [t.dtype for t in ir.result_types]
    return plan_chunks(ReadWindows(ir, extents), shape, values, host, dtypes, budget)


def test_the_plan_keeps_each_chunk_within_the_budget():
    plan = _plan(stencil, (23,), budget=100)
    assert len(plan.chunks) > 2
    assert plan.slot_bytes * 2 <= 100
    assert [c.block[0] for c in plan.chunks][0][0] == 0
    assert plan.chunks[-1].block[0][1] == 23


def test_a_phase_moves_the_chunk_starts_and_an_overlap_widens_the_blocks():
    ir, values = _prepared(stencil, 1)
    extents = {k: v.shape for k, v in enumerate(values) if isinstance(v, np.ndarray)}
    reads, host = ReadWindows(ir, extents), sorted(extents)
    dtypes = [t.dtype for t in ir.result_types]

    def blocks(**cut):
        plan = plan_chunks(reads, (23,), values, host, dtypes, 10**6, rows=4, granule=4, **cut)
        return [c.block[0] for c in plan.chunks], plan

    assert blocks()[0] == [(0, 4), (4, 8), (8, 12), (12, 16), (16, 20), (20, 23)]
    assert blocks(phase=3)[0] == [(0, 7), (7, 11), (11, 15), (15, 19), (19, 23)]
    widened, plan = blocks(phase=3, overlap=(4, 0))
    assert widened == [(0, 7), (3, 11), (7, 15), (11, 19), (15, 23)]
    (kx,) = plan.streamed
    assert plan.chunks[1].windows[kx] == ((2, 12),)  # (the widened block's halo)
    assert blocks(overlap=(0, 4))[0][-2:] == [(16, 23), (20, 23)]


def test_work_bytes_count_against_the_budget():
    ir, values = _prepared(stencil, 1)
    extents = {k: v.shape for k, v in enumerate(values) if isinstance(v, np.ndarray)}
    reads, host = ReadWindows(ir, extents), sorted(extents)
    dtypes = [t.dtype for t in ir.result_types]
    plain = plan_chunks(reads, (23,), values, host, dtypes, 400)
    worked = plan_chunks(reads, (23,), values, host, dtypes, 400, work=24)
    assert len(worked.chunks) > len(plain.chunks)
    assert worked.slot_bytes * 2 <= 400


def test_a_gathered_array_is_resident_and_over_budget_is_a_located_error():
    plan = _plan(gathered, (23,), budget=1000)
    assert len(plan.resident) == 1
    with pytest.raises(DoesNotFit) as err:
        _plan(gathered, (23,), budget=150)
    text = str(err.value)
    assert "test_window.py" in text and "X[P[i]]" in text and "not bounded" in text


D = RNG.random(40)


def diagonal(i, j):
    return D[i + j] - M[i, (j + 2) % 7]  # D's axis follows both result axes


@pytest.mark.parametrize("fn", [rows2d, shifted2d, diagonal])
def test_grid_windows_from_bands_are_sound_and_exact_for_separable_reads(fn):
    ir, values = _prepared(fn, 2)
    wf = windowed(ir)
    extents = {k: values[k].shape for k in wf.arrays}
    reads = ReadWindows(ir, extents)
    bounds = [[0, 3, 4, 11], [0, 2, 7]]
    grid = GridWindows(reads, bounds)
    want = compute(ir, (11, 7), values)
    outs = [np.zeros((11, 7), t.dtype) for t in ir.result_types]
    for index in np.ndindex(3, 2):
        block = grid.block(index)
        wins, _ = grid.of(index)
        direct, _ = reads.of(block)
        if fn is not diagonal:  # each capture axis follows one result axis: exact
            assert wins == direct
        cut_values = [cut(v, wins[k]) if k in wins else v for k, v in enumerate(values)]
        bshape = tuple(hi - lo for lo, hi in block)
        got = compute(wf.fn, bshape, wf.values(cut_values, block, wins, extents))
        for out, g in zip(outs, got, strict=True):
            out[tuple(slice(lo, hi) for lo, hi in block)] = g
    for w, g in zip(want, outs, strict=True):
        assert w.tobytes() == g.tobytes()
