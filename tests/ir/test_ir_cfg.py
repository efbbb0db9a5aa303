"""Dominators, reverse postorder and predecessors on small CFGs, checked against brute force."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offload.ir.cfg import (
    dominates,
    dominator_tree,
    dominators,
    immediate_dominators,
    predecessors,
    reverse_postorder,
)
from offload.ir.core import Block, Branch, Function, Jump, Return, Value
from offload.ir.parser import parse_function
from offload.ir.types import BOOL

pytestmark = pytest.mark.unit

# entry -> loop; loop -> body | exit; body -> then | join; then -> join; join -> loop
LOOP = parse_function(
    textwrap.dedent(
        """\
        func @f(index %i.0: i64) -> (i64) {
        ^entry.0:
          %c.1 = const true : bool
          br ^loop.1
        ^exit.2:
          return %i.0
        ^loop.1:
          condbr %c.1, ^body.3, ^exit.2
        ^body.3:
          condbr %c.1, ^then.4, ^join.5
        ^then.4:
          br ^join.5
        ^join.5:
          br ^loop.1
        ^dead.6:
          br ^join.5
        }
        """
    )
)


def _blocks(fn: Function) -> dict[str | None, Block]:
    return {b.hint: b for b in fn.blocks}


def test_reverse_postorder_starts_at_entry_and_skips_unreachable_blocks() -> None:
    rpo = [b.hint for b in reverse_postorder(LOOP)]
    assert rpo[0] == "entry"
    assert "dead" not in rpo
    assert rpo.index("loop") < rpo.index("body") < rpo.index("then") < rpo.index("join")
    assert set(reverse_postorder(LOOP)) == {b for b in LOOP.blocks if b.hint != "dead"}


def test_immediate_dominators_of_a_loop_with_a_diamond() -> None:
    b = _blocks(LOOP)
    idom = immediate_dominators(LOOP)
    assert idom[b["entry"]] is None
    assert idom[b["loop"]] is b["entry"]
    assert idom[b["exit"]] is b["loop"]
    assert idom[b["then"]] is b["body"]
    assert idom[b["join"]] is b["body"]  # not "then": the diamond's other edge skips it
    assert b["dead"] not in idom
    assert dominator_tree(LOOP)[b["body"]] == [b["then"], b["join"]]


def test_dominator_sets_and_unreachable_convention() -> None:
    b = _blocks(LOOP)
    doms = dominators(LOOP)
    assert doms[b["join"]] == {b["entry"], b["loop"], b["body"], b["join"]}
    assert dominates(doms, b["loop"], b["exit"])
    assert not dominates(doms, b["then"], b["join"])
    assert doms[b["dead"]] == set(LOOP.blocks)  # any use in dead code is acceptable


def test_predecessors_count_each_edge() -> None:
    b = _blocks(LOOP)
    preds = predecessors(LOOP)
    assert preds[b["join"]] == [b["body"], b["then"], b["dead"]]
    assert preds[b["entry"]] == []


def _random_cfg(edges: list[list[int]]) -> Function:
    n = len(edges)
    blocks = [Block(hint=f"b{k}") for k in range(n)]
    cond = Value(BOOL, "c")
    blocks[0].args.append(cond)
    for k, succ in enumerate(edges):
        targets = [blocks[s % n] for s in succ]
        if not targets:
            blocks[k].terminator = Return([])
        elif len(targets) == 1:
            blocks[k].terminator = Jump(targets[0])
        else:
            blocks[k].terminator = Branch(cond, targets[0], [], targets[1], [])
    return Function("g", blocks, 0, [], [])


def _reaches_avoiding(fn: Function, target: Block, avoid: Block) -> bool:
    seen = {fn.entry} if fn.entry is not avoid else set()
    todo = list(seen)
    while todo:
        b = todo.pop()
        if b is target:
            return True
        for s in b.successors():
            if s not in seen and s is not avoid:
                seen.add(s)
                todo.append(s)
    return False


@given(st.lists(st.lists(st.integers(0, 7), max_size=2), min_size=1, max_size=8))
def test_dominators_match_the_definition_by_brute_force(edges: list[list[int]]) -> None:
    # a dominates b  <=>  every path from the entry to b passes through a.
    fn = _random_cfg(edges)
    doms = dominators(fn)
    live = set(reverse_postorder(fn))
    for b in live:
        for a in fn.blocks:
            want = a is b or not _reaches_avoiding(fn, b, a)
            assert (a in doms[b]) == want
