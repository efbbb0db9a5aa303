"""The ``stage`` pass (GPU kernels): which loops it stages, the IR it makes, and that the
staged IR means what the original means (interpreter; the shared-memory mechanics
themselves are checked by the simulator and GPU lanes)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.frontend.lower import fetch_captures
from offload.ir.interp import compute
from offload.ir.ops import Opcode
from offload.ir.printer import print_function
from offload.ir.tile_ops import tile_of, tile_slots
from offload.ir.verifier import verify
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.passes.narrow import NarrowIndexArithmetic
from offload.ptx.passes.stage import StageTiles
from tests.corpus.staged import CASES, StagedCase, matmul
from tests.opt.golden import filecheck
from tests.strategies.programs import programs, same_results

pytestmark = pytest.mark.unit


def _optimised(fn, rank=2):
    return run_pipeline(check_and_lower(fn, rank).ir, CompileOptions(verify=True))


def _captures(fn, rank=2):
    """The values ``fn`` captures, in the IR's order."""
    return fetch_captures(fn, check_and_lower(fn, rank))


def _staged(ir, tile=4):
    before = print_function(ir)
    out = StageTiles(tile=tile).run(ir)
    verify(out)
    assert print_function(ir) == before, "the pass mutated the IR it was handed"
    return out


@pytest.mark.parametrize("case", CASES, ids=repr)
@pytest.mark.parametrize("narrowed", [False, True])
def test_stages_exactly_the_eligible_loops_and_keeps_the_values(case: StagedCase, narrowed):
    ir = _optimised(case.fn)
    if narrowed:
        ir = NarrowIndexArithmetic().run(ir)
    out = _staged(ir)
    assert (tile_of(out) == 4) is case.staged, print_function(out)
    caps = _captures(case.fn)
    assert same_results(compute(ir, case.shape, caps), compute(out, case.shape, caps))


def test_matmul_stages_a_row_slot_and_a_column_slot_per_unrolled_copy():
    out = _staged(_optimised(matmul(5, 7, 37).fn), tile=16)
    alongs = sorted(op.attrs["along"] for op in out.ops() if op.opcode is Opcode.TILE_READ)
    assert alongs == [0] * 4 + [1] * 4  # a[i, k] varies with rows, bt[j, k] with columns
    assert len(tile_slots(out)) == 8
    filecheck(
        print_function(out),
        """
        CHECK: ^chunk
        CHECK: ge
        CHECK: lt
        CHECK: condbr {{.*}}, ^stage{{.*}}, ^unroll
        CHECK: ^stage
        CHECK-NEXT: barrier
        CHECK: lane {axis = 1}
        CHECK: stage %a{{.*}} {slot = 0, tile = 16}
        CHECK: lane {axis = 0}
        CHECK: stage %bt{{.*}} {slot = 1, tile = 16}
        CHECK: barrier
        CHECK: ^tile{{.*}}(%it
        CHECK: lt %it{{.*}}
        CHECK: ^tile_body
        CHECK: tile_read %a{{.*}} {along = 0, slot = 0}
        CHECK: tile_read %bt{{.*}} {along = 1, slot = 1}
        CHECK: ^unroll
        CHECK: load %a
        """,
    )


def test_rank_three_kernels_are_left_alone():
    x = np.arange(40, dtype=np.float32)

    def f(t, u, v):
        acc = np.float32(0.0)
        for k in range(8):
            acc += x[k]
        return acc

    ir = _optimised(f, 3)
    assert print_function(StageTiles(tile=4).run(ir)) == print_function(ir)


def test_a_loop_nested_in_another_is_not_staged():
    a = np.ones((4, 9), np.float32)
    b = np.ones((5, 9), np.float32)

    def f(i, j):
        acc = np.float32(0.0)
        for r in range(3):
            for k in range(a.shape[1]):
                acc += a[i, k] * b[j, k] * r
        return acc

    assert tile_of(_staged(_optimised(f))) is None


def test_bool_arrays_are_not_staged():
    m = np.ones((4, 20), dtype=np.bool_)
    n = np.ones((5, 20), dtype=np.bool_)

    def f(i, j):
        c = 0
        for k in range(m.shape[1]):
            if m[i, k] and n[j, k]:
                c += 1
        return c

    assert tile_of(_staged(_optimised(f))) is None


@settings(max_examples=40, deadline=None)
@given(
    n0=st.integers(1, 6),
    n1=st.integers(1, 6),
    k=st.integers(0, 40),
    start=st.integers(-5, 5),
    step=st.integers(1, 4),
    tile=st.integers(1, 5),
)
def test_any_range_and_tile_keeps_the_values(n0, n1, k, start, step, tile):
    rng = np.random.default_rng(k)
    a = rng.random((n0, max(k, 1))).astype(np.float32)
    bt = rng.random((n1, max(k, 1))).astype(np.float32)
    lo = max(start, -a.shape[1])  # negative indices wrap like Python's, never below -len

    def f(i, j):
        acc = np.float32(0.0)
        for kk in range(lo, k, step):
            acc += a[i, kk] * bt[j, kk]
        return acc

    ir = _optimised(f)
    out = _staged(ir, tile)
    caps = _captures(f)
    shape = (n0, n1)
    assert same_results(compute(ir, shape, caps), compute(out, shape, caps))


@settings(max_examples=60, deadline=None)
@given(programs())
def test_random_programs_keep_their_values(case):
    fn, shape, caps = case
    ir = run_pipeline(fn, CompileOptions(verify=True))
    out = StageTiles(tile=2, line=3).run(ir)
    verify(out)
    try:
        expected = compute(ir, shape, caps, max_steps=20_000)
    except Exception as err:  # the original's own error (a bad index, a step limit)
        with pytest.raises(type(err)):
            compute(out, shape, caps, max_steps=40_000)
        return
    assert same_results(expected, compute(out, shape, caps, max_steps=40_000))
