"""``offload.opt.cooperate``: golden IR of a segment loop split into terms and recurrence,
the loops it leaves alone, and the interpreter's values unchanged (a group of one lane is
the original loop) on random segments, including NaN, infinities and -0.0."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload import driver
from offload.ir.core import Function
from offload.ir.group_ops import group_of
from offload.ir.interp import compute
from offload.ir.printer import print_function
from offload.ir.verifier import verify
from offload.opt.cooperate import Cooperate
from offload.opt.licm import LoopInvariantCodeMotion
from offload.opt.manager import run_pipeline
from offload.opt.narrow import NarrowIndexArithmetic
from offload.opt.reroll import Reroll
from offload.options import CompileOptions
from tests.opt.golden import filecheck
from tests.strategies.programs import programs, same_results

pytestmark = pytest.mark.unit

rowptr = np.array([0, 3, 3, 8], dtype=np.int64)
col = np.zeros(8, dtype=np.int64)
val = np.zeros(8, dtype=np.float32)
x = np.zeros(4, dtype=np.float32)
ival = np.zeros(8, dtype=np.int8)


def row_dot(i):
    acc = np.float32(0.0)
    for k in range(rowptr[i], rowptr[i + 1]):
        acc += val[k] * x[col[k]]
    return acc


def row_max_and_count(i):
    # two carried values; max keeps the first NaN it meets, so the order is observable
    m = np.float32(-np.inf)
    n = 0
    for k in range(rowptr[i], rowptr[i + 1]):
        v = val[k]
        m = max(m, v)
        n = n * 3 + int(v > 0)
    return m, n


def row_decay(i):
    acc = 0.5
    for k in range(rowptr[i], rowptr[i + 1], 2):
        acc = acc * 0.75 + val[k] * x[col[k]] - k
    return acc


def row_int8(i):
    s = np.int8(0)
    for k in range(rowptr[i], rowptr[i + 1]):
        s = s * np.int8(3) + ival[k]
    return s


def uniform_range(i):
    acc = np.float32(0.0)
    for k in range(len(val)):
        acc += val[k] * x[i % 4]
    return acc


def counter_after(i):
    k = 0
    for k in range(rowptr[i], rowptr[i + 1]):  # noqa: B007  (k is read after the loop)
        pass
    return k + val[i]


FUNCTIONS = [row_dot, row_max_and_count, row_decay, row_int8]


def _optimised(fn: Any) -> Function:
    return run_pipeline(driver.check_and_lower(fn, 1).ir, CompileOptions(verify=True))


def _cooperative(ir: Function, group: int = 4) -> Function:
    out = Cooperate(group).run(Reroll().run(ir))
    verify(out)
    return out


def test_a_segment_loop_splits_into_lane_terms_and_an_ordered_recurrence() -> None:
    ir = _optimised(row_dot)
    before = print_function(ir)
    out = _cooperative(ir)
    assert print_function(ir) == before, "the pass mutated the IR it was handed"
    assert group_of(out) == 4
    filecheck(
        print_function(out),
        """\
        CHECK: ^loop.{{[0-9]+}}(%k.[[C:[0-9]+]]: i64, %acc.{{[0-9]+}}: f32):
        CHECK-NEXT: lt %k.[[C]],
        CHECK: ^coop_part
        CHECK: group_lane {group = 4} : i64
        CHECK: ^coop_terms
        CHECK: load %val
        CHECK: load %col
        CHECK: load %x
        CHECK: mul
        CHECK: ^coop_join.{{[0-9]+}}(%{{[0-9]+}}: f32):
        CHECK: group_size {group = 4} : i64
        CHECK: ^coop_step
        CHECK: shfl
        CHECK: add %acc
        CHECK: ^coop_next
        CHECK: group_size {group = 4}
        """,
    )
    step = print_function(out).split("\n^coop_step")[1].split("\n^")[0]
    assert step.index("shfl") < step.index("add %acc")  # lane l's term, then the sum


@pytest.mark.parametrize("fn", [uniform_range, counter_after], ids=lambda f: f.__name__)
def test_loops_it_leaves_alone(fn: Any) -> None:
    # a range every element shares (staging's case); a counter read after its loop
    assert group_of(_cooperative(_optimised(fn))) == 1


def test_the_32_bit_kernel_is_split_too() -> None:
    # as offload.ptx.variants makes it: narrowed, then the widening casts hoisted
    narrowed = NarrowIndexArithmetic(trust_load_indices=True).run(_optimised(row_dot))
    assert group_of(_cooperative(LoopInvariantCodeMotion().run(narrowed))) == 4


floats = st.floats(allow_nan=True, allow_infinity=True, width=32)


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 11), min_size=1, max_size=6),
    data=st.data(),
    group=st.sampled_from([1, 2, 4, 32]),
)
def test_one_lane_groups_give_the_original_values(lengths: list[int], data: Any, group: int):
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    nnz = int(ptr[-1])
    v = np.array(data.draw(st.lists(floats, min_size=nnz, max_size=nnz)), dtype=np.float32)
    cols = np.array(
        data.draw(st.lists(st.integers(-4, 3), min_size=nnz, max_size=nnz)), dtype=np.int64
    )
    xs = np.array(data.draw(st.lists(floats, min_size=4, max_size=4)), dtype=np.float32)
    iv = np.array(
        data.draw(st.lists(st.integers(-128, 127), min_size=nnz, max_size=nnz)), dtype=np.int8
    )
    values = {"rowptr": ptr, "col": cols, "val": v, "x": xs, "ival": iv}
    for fn in FUNCTIONS:
        ir = _optimised(fn)
        out = _cooperative(ir, group)
        assert group_of(out) == group
        caps = [values[c.name] for c in ir.captures]
        shape = (len(lengths),)
        assert same_results(compute(ir, shape, caps), compute(out, shape, caps)), fn.__name__


@settings(max_examples=40, deadline=None)
@given(programs())
def test_random_programs_keep_their_values(case: Any) -> None:
    fn, shape, caps = case
    out = _cooperative(fn)
    assert same_results(compute(fn, shape, caps), compute(out, shape, caps))
