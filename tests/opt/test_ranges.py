"""Integer range facts: parameters, loop counters, branch narrowing, and soundness on
random programs (every value the interpreter computes lies in its range)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.analysis.ranges import INDEX_LIMIT, Range, RangeFacts
from offload.ir.interp import evaluate
from offload.ir.parser import parse_function

pytestmark = pytest.mark.unit

LOOP = """\
func @f(index %i.0: i64) -> (i64) {
^entry.0:
  %z = const 0 : i64
  br ^loop.1(%z)
^loop.1(%k: i64):
  %n = const 10 : i64
  %c = lt %k, %n : bool
  condbr %c, ^body.2, ^done.3
^body.2:
  %one = const 1 : i64
  %k2 = add %k, %one : i64
  br ^loop.1(%k2)
^done.3:
  return %k
}
"""


def _by_hint(fn_text: str) -> tuple[RangeFacts, dict[str, object]]:
    fn = parse_function(fn_text)
    names: dict[str, object] = {}
    for b in fn.blocks:
        names[b.hint or ""] = b
        for v in [*b.args, *(op.result for op in b.ops)]:
            names[v.hint or ""] = v
    return RangeFacts(fn), names


def test_index_parameter_is_nonnegative_and_below_limit() -> None:
    facts, v = _by_hint(LOOP)
    assert facts.range_of(v["i"]) == Range(0, INDEX_LIMIT - 1)  # type: ignore[arg-type]


def test_for_range_counter_is_bounded_by_its_trip_count() -> None:
    facts, v = _by_hint(LOOP)
    assert facts.range_of(v["k"]) == Range(0, 10)  # type: ignore[arg-type]
    assert facts.range_of(v["k"], v["body"]) == Range(0, 9)  # type: ignore[arg-type]
    assert facts.range_of(v["k"], v["done"]) == Range(10, 10)  # type: ignore[arg-type]


def test_branch_on_greater_than_zero_narrows_then_block() -> None:
    text = """\
func @f(index %i.0: i64, capture "s" %s.1: i64) -> (i64) {
^entry.0:
  %z = const 0 : i64
  %c = gt %s.1, %z : bool
  condbr %c, ^pos.1, ^other.2
^pos.1:
  return %s.1
^other.2:
  return %z
}
"""
    facts, v = _by_hint(text)
    assert facts.range_of(v["s"], v["pos"]) == Range(1, 2**63 - 1)  # type: ignore[arg-type]
    assert facts.range_of(v["s"], v["other"]) == Range(-(2**63), 0)  # type: ignore[arg-type]


def test_possibly_wrapping_multiply_spans_whole_type() -> None:
    text = """\
func @f(index %i.0: i64) -> (i64) {
^entry.0:
  %m = mul %i.0, %i.0 : i64
  %c = const 7 : i64
  %r = floormod %m, %c : i64
  return %r
}
"""
    facts, v = _by_hint(text)
    assert facts.range_of(v["m"]) == Range(-(2**63), 2**63 - 1)  # type: ignore[arg-type]
    assert facts.range_of(v["r"]) == Range(0, 6)  # type: ignore[arg-type]


def test_unbounded_while_counter_is_widened_not_looped_forever() -> None:
    text = LOOP.replace("%c = lt %k, %n : bool", "%c = ne %k, %n : bool").replace(
        "%one = const 1", "%one = const 3"
    )
    facts, v = _by_hint(text)
    # k = 0, 3, 6, 9, 12, ... never equals 10 and eventually wraps: nothing is known.
    assert facts.range_of(v["k"]) == Range(-(2**63), 2**63 - 1)  # type: ignore[arg-type]


SHORT_CIRCUIT = """\
func @f(index %z.0: i64, index %y.1: i64, capture "n" %n.2: i64) -> (i64) {
^entry.0:
  %zero = const 0 : i64
  %cz = eq %z.0, %zero : bool
  condbr %cz, ^join.1(%cz), ^short.2
^short.2:
  %cy = eq %y.1, %zero : bool
  %cn = eq %y.1, %n.2 : bool
  %either = select %cy, %cy, %cn : bool
  br ^join.1(%either)
^join.1(%halo: bool):
  condbr %halo, ^edge.3, ^inner.4
^edge.3:
  return %zero
^inner.4:
  return %z.0
}
"""


def test_branch_on_a_short_circuit_or_narrows_every_operand() -> None:
    # `if z == 0 or y == 0 or ...: ... else:` lowers to a bool block argument, and its last
    # two tests to select(c, c, d): in the else-block z and y are both known non-zero.
    facts, v = _by_hint(SHORT_CIRCUIT)
    assert facts.range_of(v["z"], v["inner"]) == Range(1, INDEX_LIMIT - 1)  # type: ignore[arg-type]
    assert facts.range_of(v["y"], v["inner"]) == Range(1, INDEX_LIMIT - 1)  # type: ignore[arg-type]
    assert facts.range_of(v["z"], v["edge"]) == Range(0, INDEX_LIMIT - 1)  # type: ignore[arg-type]


GUARDED_LOOP = """\
func @f(index %i.0: i64, capture "s" %s.1: i64) -> (i64) {
^entry.0:
  %one = const 1 : i64
  %big = const 4096 : i64
  %lo = ge %s.1, %one : bool
  %hi = le %s.1, %big : bool
  %ok = and %lo, %hi : bool
  condbr %ok, ^loop.1(%i.0), ^done.3(%i.0)
^loop.1(%k: i64):
  %lim = const 1000 : i64
  %c = lt %k, %lim : bool
  condbr %c, ^body.2, ^done.3(%k)
^body.2:
  %k2 = add %k, %s.1 : i64
  br ^loop.1(%k2)
^done.3(%r: i64):
  return %r
}
"""


def test_a_loop_entered_under_a_guard_keeps_the_guards_fact_in_its_body() -> None:
    facts, v = _by_hint(GUARDED_LOOP)
    positive = Range(1, 4096)
    assert facts.range_of(v["s"], v["loop"]) == positive  # type: ignore[arg-type]
    assert facts.range_of(v["s"], v["body"]) == positive  # type: ignore[arg-type]
    # k = i, i + s, ... with 1 <= s <= 4096: never negative (before, s was unbounded in the
    # loop, k + s could wrap, and k spanned the whole type).
    assert facts.range_of(v["k"], v["body"]) == Range(0, 999)  # type: ignore[arg-type]
    assert facts.range_of(v["s"], v["done"]) == Range(-(2**63), 2**63 - 1)  # type: ignore[arg-type]


def test_a_loop_varying_bool_is_not_carried_around_the_back_edge() -> None:
    # %c is true on the back edge, but the header computes a new %c each trip: the header
    # (where %c is defined, so not before it) must not assume the old one.
    facts, v = _by_hint(LOOP)
    assert facts.range_of(v["c"], v["loop"]) == Range(0, 1)  # type: ignore[arg-type]
    assert facts.range_of(v["k"], v["done"]) == Range(10, 10)  # type: ignore[arg-type]


_CMPS = ["lt", "le", "gt", "ge", "eq", "ne"]


@settings(max_examples=150, deadline=None)
@given(
    ops=st.tuples(*[st.sampled_from(_CMPS)] * 3),
    consts=st.tuples(st.integers(-3, 6), st.integers(-3, 6)),
    conjunction=st.booleans(),
    inputs=st.lists(
        st.tuples(st.integers(0, 8), st.integers(0, 8), st.integers(-4, 8)), min_size=1, max_size=12
    ),
)
def test_short_circuit_facts_contain_what_the_interpreter_sees(ops, consts, conjunction, inputs):
    # Random tests in the SHORT_CIRCUIT shape (and its `and` form): wherever the program
    # returns, the facts of that block hold for the index values it ran with.
    either = "select %cy, %cn, %cy" if conjunction else "select %cy, %cy, %cn"
    edits = {
        "%cz = eq %z.0, %zero": f"%k1 = const {consts[0]} : i64\n  %cz = {ops[0]} %z.0, %k1",
        "%cy = eq %y.1, %zero": f"%k2 = const {consts[1]} : i64\n  %cy = {ops[1]} %y.1, %k2",
        "%cn = eq %y.1, %n.2": f"%cn = {ops[2]} %y.1, %n.2",
        "select %cy, %cy, %cn": either,
        "return %zero": "%m1 = const -1 : i64\n  %neg = sub %m1, %z.0 : i64\n  return %neg",
        "return %z.0": "return %y.1",
    }
    text = SHORT_CIRCUIT
    for old, new in edits.items():
        text = text.replace(old, new)
    fn = parse_function(text)
    facts = RangeFacts(fn)
    names = {x.hint: x for b in fn.blocks for x in [*b.args, *(o.result for o in b.ops)]}
    blocks = {b.hint: b for b in fn.blocks}
    for z, y, n in inputs:
        (got,) = evaluate(fn, (z, y), [np.int64(n)])
        block = blocks["edge"] if int(got) < 0 else blocks["inner"]
        for name, value in (("z", z), ("y", y)):
            r = facts.range_of(names[name], block)
            assert r is not None and r.lo <= value <= r.hi, (name, value, r, text)


def test_facts_about_a_finished_loop_are_not_carried_into_every_later_block(
    tmp_path: Path,
) -> None:
    # issue 19: each block inherited every fact of its dominators (a counter's k == 2 after
    # its loop, in every later block), O(N) facts a block for N loops in a row: quadratic.
    from offload.lowering import check_and_lower
    from tests.opt.scaling import load

    def largest_env(n_lines: int) -> int:
        facts = RangeFacts(check_and_lower(load("nested-loops", n_lines, tmp_path), 1).ir)
        return max(len(env) for env in facts.block_facts.values())

    assert largest_env(120) == largest_env(30)  # 40 loop nests, or 10: the same


def test_a_fact_stays_where_its_value_is_still_used() -> None:
    text = """\
func @f(index %i.0: i64) -> (i64) {
^entry.0:
  %ten = const 10 : i64
  %c = lt %i.0, %ten : bool
  condbr %c, ^small.1, ^big.2
^small.1:
  br ^later.3
^later.3:
  return %i.0
^big.2:
  return %ten
}
"""
    facts, v = _by_hint(text)
    assert facts.range_of(v["i"], v["later"]) == Range(0, 9)  # type: ignore[arg-type]
