"""The restriction checks run over every element function of a delayed-array tree, with
all violations reported together and located, before the tree is lowered."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload import delayed as ol
from offload.diagnostics import AllocationNotAllowed, OffloadError, WriteNotAllowed
from offload.lowering import check_and_lower, check_target

pytestmark = pytest.mark.unit

X = np.arange(12.0).reshape(3, 4)
V = np.arange(6.0)
FILE = __file__


def _allocates_and_writes(x: Any) -> Any:
    t = {x, x}
    X[0, 0] = 1.0
    return t[0]


def _allocates(i: int, j: int) -> Any:
    t = {i, j}
    return t[0] * 1.0


def _neighbours(get: Any, i: int) -> Any:
    return get(i) + get(i + 1)


def _traverse_writes(get: Any, i: int) -> Any:
    V[i] = get(i)
    return 0.0


def _located(diag: Any) -> tuple[int, str]:
    assert diag.span is not None and diag.span.file == FILE
    return diag.span.line, diag.span.text[diag.span.col :]


def test_every_violation_of_a_map_function_is_reported_together_at_its_node() -> None:
    d = ol.map(_allocates_and_writes, X)
    with pytest.raises(AllocationNotAllowed) as info:
        check_and_lower(d, 2)
    rules = [diag.rule for diag in info.value.diagnostics]
    assert rules == ["allocation", "write"]
    alloc, write = (_located(diag) for diag in info.value.diagnostics)
    assert alloc[1].startswith("{x, x}")
    assert write[1].startswith("X[0, 0]")
    assert write[0] == alloc[0] + 1


def test_violations_at_every_level_of_the_tree_are_reported_in_reading_order() -> None:
    d = ol.map(_allocates_and_writes, ol.from_function((3, 4), _allocates))
    diags = check_target(d)
    assert [d.rule for d in diags] == ["allocation", "write", "allocation"]
    lines = [_located(diag)[0] for diag in diags]
    assert lines == sorted(lines)
    with pytest.raises(OffloadError) as info:
        check_and_lower(d, 2)
    assert len(info.value.diagnostics) == 3


def test_a_traverse_function_may_call_its_getter_but_not_write() -> None:
    good = ol.traverse(V, lambda sh: (sh[0] - 1,), _neighbours)
    assert check_target(good) == []
    bad = ol.traverse(V, lambda sh: (sh[0] - 1,), _traverse_writes)
    with pytest.raises(WriteNotAllowed) as info:
        check_and_lower(bad, 1)
    (diag,) = info.value.diagnostics
    assert _located(diag)[1].startswith("V[i]")


def test_a_function_used_twice_in_a_tree_is_checked_once() -> None:
    inner = ol.map(_allocates_and_writes, X)
    d = ol.zip_with(lambda a, b: a + b, inner, ol.map(_allocates_and_writes, X))
    assert [d.rule for d in check_target(d)] == ["allocation", "write"]


def test_dtype_of_a_delayed_array_reports_the_restriction_violations() -> None:
    d = ol.map(_allocates_and_writes, X)
    with pytest.raises(AllocationNotAllowed):
        _ = d.dtype
