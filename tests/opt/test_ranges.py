"""Integer range facts: parameters, loop counters, branch narrowing, and soundness on
random programs (every value the interpreter computes lies in its range)."""

from __future__ import annotations

import pytest

from offload.analysis.ranges import INDEX_LIMIT, Range, RangeFacts
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
