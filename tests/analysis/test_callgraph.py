"""Call graph over helpers; recursion found as strongly connected components."""

from __future__ import annotations

from typing import Any

import pytest

from offload.analysis.callgraph import build_call_graph, strongly_connected_components
from offload.analysis.check import check_function
from offload.frontend.source import get_source
from tests.analysis.support import covered

pytestmark = pytest.mark.unit


def _leaf(x: Any) -> Any:
    return x * 2


def _left(x: Any) -> Any:
    return _leaf(x) + 1


def _right(x: Any) -> Any:
    return _leaf(x) - 1


def diamond(i: int) -> Any:
    return _left(i) + _right(i) + _leaf(i)


def _bad_leaf(x: Any) -> Any:
    return len({x})


def calls_bad_leaf_twice(i: int) -> Any:
    return _bad_leaf(i) + _bad_leaf(i + 1)


def _down(n: Any) -> Any:
    return 0 if n <= 0 else _down(n - 1) + _down(n - 2)


def _ping(n: Any) -> Any:
    return 0 if n <= 0 else _pong(n - 1)


def _pong(n: Any) -> Any:
    return _ping(n - 1)


def two_cycles(i: int) -> Any:
    return _down(i) + _ping(i)


def test_shared_helper_in_a_diamond_is_not_recursion() -> None:
    graph = build_call_graph(get_source(diamond))
    assert [fn.__name__ for fn in graph.nodes] == ["diamond", "_left", "_right", "_leaf"]
    assert all(len(c) == 1 for c in strongly_connected_components(graph))
    assert check_function(get_source(diamond)) == []


def test_components_come_out_callees_first() -> None:
    graph = build_call_graph(get_source(two_cycles))
    components = [sorted(fn.__name__ for fn in c) for c in strongly_connected_components(graph)]
    assert components == [["_down"], ["_ping", "_pong"], ["two_cycles"]]


def test_each_cycle_is_reported_once_at_its_first_closing_call() -> None:
    diags = check_function(get_source(two_cycles))
    assert [(d.rule, covered(d)) for d in diags] == [
        ("recursion", "_down(n - 1)"),
        ("recursion", "_ping(n - 1)"),
    ]
    assert "'_ping' -> '_pong' -> '_ping'" in diags[1].message


def test_helper_called_twice_is_checked_once_with_the_first_call_site_noted() -> None:
    diags = check_function(get_source(calls_bad_leaf_twice))
    assert [(d.rule, covered(d)) for d in diags] == [("allocation", "{x}")]
    notes = diags[0].notes
    assert len(notes) == 1 and notes[0].span is not None
    assert notes[0].message == "in '_bad_leaf' called from here"
    assert notes[0].span.text[notes[0].span.col : notes[0].span.end_col] == "_bad_leaf(i)"
