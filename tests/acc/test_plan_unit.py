"""The reduction tree is fixed by sizes alone (and whether the combine commutes, and the
mode): the rules' shapes, and the commutativity test read from source."""

from __future__ import annotations

import pytest

from offload.acc.commute import commutes
from offload.acc.plan import CPU_CHUNK, FINAL, WIDE_PARTIALS, WIDE_ROWS, stages, wide_rule

pytestmark = pytest.mark.unit


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def max_(a, b):
    return max(a, b)


def test_wide_tree_of_a_long_vector_ends_in_a_short_sequential_fold():
    plan = stages(1, 1 << 28, wide=True, commutes=True)
    assert plan[0].p == WIDE_PARTIALS and plan[0].c == (1 << 28) // WIDE_PARTIALS
    assert all(st.strided for st in plan)
    assert plan[-1].p <= FINAL
    for a, b in zip(plan, plan[1:], strict=False):
        assert b.n == a.p and b.p * b.c >= b.n


def test_every_partial_of_a_tree_is_non_empty():
    for n in (65, 100, 1000, 4097, 123457):
        for wide in (True, False):
            for st in stages(1, n, wide=wide, commutes=True) or ():
                assert (st.p - 1) * st.c < st.n <= st.p * st.c


def test_trees_only_where_rows_are_few_and_long():
    assert stages(WIDE_ROWS, 1 << 20, wide=True, commutes=False) == ()
    assert stages(1, FINAL, wide=True, commutes=True) == ()
    assert stages(1, 2 * CPU_CHUNK - 1, wide=False, commutes=True) == ()
    cpu = stages(1, 1 << 24, wide=False, commutes=True)
    assert len(cpu) == 1 and not cpu[0].strided and cpu[0].p == 256


def test_wide_rule_follows_the_target_and_the_mode():
    assert wide_rule("gpu", "deterministic") and wide_rule("gpu-sim", "fast")
    assert not wide_rule("cpu-par", "deterministic") and not wide_rule("cpu-seq", "fast")
    assert wide_rule("cpu-seq", "cross_target")
    with pytest.raises(ValueError, match="determinism"):
        wide_rule("gpu", "quick")


def test_commutes_recognises_only_commuting_operators_of_both_parameters():
    assert commutes(add) and commutes(lambda a, b: b * a) and commutes(lambda x, y: x ^ y)
    assert not commutes(sub) and not commutes(max_) and not commutes(lambda a, b: a + a)
    assert not commutes(print)


def test_commutes_recognises_component_wise_commuting_tuples():
    assert commutes(lambda p, q: (p[0] + q[0], q[1] * p[1]))
    assert commutes(lambda p, q: (p[0] | q[0],))
    assert not commutes(lambda p, q: (p[0] + q[1], p[1] + q[0]))  # (components crossed)
    assert not commutes(lambda p, q: (p[0] + q[0], max(p[1], q[1])))
    assert not commutes(lambda p, q: (p[0] + p[0], q[1] + q[1]))
    assert not commutes(lambda p, q: (p[0] - q[0], p[1] + q[1]))
    assert not commutes(lambda p, q: (p[k] + q[k] for k in range(2)))
    assert not commutes(lambda p, q: ())


def test_many_long_rows_and_long_segments_get_neighbouring_lanes_on_the_gpu():
    from offload.acc.plan import SEG_LANES, WIDE_ROW_LANES, seg_lanes

    (st,) = stages(WIDE_ROWS, 1000, wide=True, commutes=True)
    assert st.p == WIDE_ROW_LANES and st.strided
    assert stages(WIDE_ROWS, 1000, wide=True, commutes=False) == ()
    assert seg_lanes(36417, 36417 * 119, wide=True, commutes=True) == 8  # 119 / 8 >= 8
    assert seg_lanes(10, 10**6, wide=True, commutes=True) == SEG_LANES
    assert seg_lanes(10, 10**6, wide=False, commutes=True) == 1
    assert seg_lanes(10, 10**6, wide=True, commutes=False) == 1
    assert seg_lanes(0, 0, wide=True, commutes=True) == 1
