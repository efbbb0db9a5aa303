"""The ``stage`` pass on rank-1 kernels (lines of threads): which reads it stages -- ones
that vary with no index, and windows -- the IR it makes, and that the staged IR means what
the original means (interpreter; the shared-memory mechanics are checked by the simulator
and GPU lanes)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.frontend.lower import fetch_captures
from offload.ir.interp import compute
from offload.ir.ops import Opcode
from offload.ir.printer import print_function
from offload.ir.tile_ops import is_window, tile_of, window_slots
from offload.ir.verifier import verify
from offload.lowering import check_and_lower
from offload.opt.licm import LoopInvariantCodeMotion
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.passes.narrow import NarrowIndexArithmetic
from offload.ptx.passes.reroll import Reroll
from offload.ptx.passes.stage import StageTiles
from tests.corpus.staged_lines import CASES, LineCase, convolution
from tests.opt.golden import filecheck
from tests.strategies.programs import same_results

pytestmark = pytest.mark.unit


def _rolled(fn):
    ir = run_pipeline(check_and_lower(fn, 1).ir, CompileOptions(verify=True))
    return Reroll().run(ir)


def _captures(fn):
    return fetch_captures(fn, check_and_lower(fn, 1))


def _staged(ir, line=4, bits=64):
    before = print_function(ir)
    out = StageTiles(line=line, index_bits=bits).run(ir)
    verify(out)
    assert print_function(ir) == before, "the pass mutated the IR it was handed"
    return out


def _slot_kinds(fn) -> tuple[int, int]:
    """(uniform slots, window slots) of a staged function."""
    windows = window_slots(fn)
    slots = {op.attrs["slot"] for op in fn.ops() if op.opcode is Opcode.STAGE}
    return len(slots - windows), len(windows)


@pytest.mark.parametrize("case", CASES, ids=repr)
@pytest.mark.parametrize("narrowed", [False, True])
def test_stages_exactly_the_eligible_reads_and_keeps_the_values(case: LineCase, narrowed):
    ir = _rolled(case.fn)
    if narrowed:  # as offload.ptx.plan: the narrowed bound is hoisted
        ir = LoopInvariantCodeMotion().run(NarrowIndexArithmetic().run(ir))
    out = _staged(ir, bits=32 if narrowed else 64)
    assert (tile_of(out) == 4) is case.staged, print_function(out)
    assert _slot_kinds(out) == (case.uniform, case.windows), print_function(out)
    caps = _captures(case.fn)
    assert same_results(compute(ir, (case.n,), caps), compute(out, (case.n,), caps))


def test_a_window_is_staged_at_two_offsets_and_read_at_the_elements_position():
    out = _staged(_rolled(convolution(23, 19).fn), line=256)
    filecheck(
        print_function(out),
        """
        CHECK: ^stage
        CHECK: barrier
        CHECK: stage %re{{.*}}, %t{{.*}}, %k{{.*}} {offset = 0, slot = 0, tile = 256}
        CHECK: stage %re{{.*}}, %t{{.*}}, %k{{.*}} {offset = 256, slot = 0, tile = 256}
        CHECK: lane {axis = 0}
        CHECK: stage %w{{.*}} {slot = 1, tile = 256}
        CHECK: barrier
        CHECK: ^tile_body
        CHECK: tile_read %re{{.*}} {along = 0, slot = 0}
        CHECK: tile_read %w{{.*}} {along = -1, slot = 1}
        """,
    )
    assert sum(is_window(op) for op in out.ops()) == 4  # re and im, two offsets each


def test_a_cast_of_the_element_index_to_int32_is_a_window_only_in_the_32_bit_kernel():
    narrowed = NarrowIndexArithmetic().run(_rolled(convolution(23, 19).fn))
    ir = LoopInvariantCodeMotion().run(narrowed)  # re[i32(t) + k]: exact under the guard
    assert _slot_kinds(_staged(ir, bits=32)) == (1, 2)
    assert _slot_kinds(_staged(ir, bits=64)) == (1, 0)  # a wrapped index in a big space


def test_the_shared_memory_budget_limits_the_slots():
    out = StageTiles(line=256, max_shared=3 * 256 * 4).run(_rolled(convolution(23, 19).fn))
    assert _slot_kinds(out) == (1, 1)  # re's window (2 KB), then w (1 KB); im's does not fit


def test_the_unrolled_loop_stages_no_window():
    ir = run_pipeline(check_and_lower(convolution(23, 19).fn, 1).ir, CompileOptions())
    assert _slot_kinds(_staged(ir)) == (4, 0)  # step 4: w of four copies, no window


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 12),
    k=st.integers(0, 30),
    start=st.integers(0, 4),
    shift=st.integers(-3, 3),
    line=st.integers(1, 5),
)
def test_any_window_range_and_line_keeps_the_values(n, k, start, shift, line):
    rng = np.random.default_rng(k)
    lo = max(start, -shift)  # indices i + kk + shift stay >= 0
    a = rng.random(n + max(k, 1) + 3).astype(np.float32)
    w = rng.random(max(k, 1)).astype(np.float32)

    def f(i):
        acc = np.float32(0.0)
        for kk in range(lo, k):
            acc += a[i + (kk + shift)] * w[kk]
        return acc

    ir = _rolled(f)
    out = _staged(ir, line)
    caps = _captures(f)
    assert same_results(compute(ir, (n,), caps), compute(out, (n,), caps))
