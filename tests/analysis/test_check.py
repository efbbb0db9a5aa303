"""check_function: all violations of all analyses, sorted, raised together as one error."""
# ruff: noqa: F841, T201

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload.analysis.check import check_function, raise_diagnostics, sort_diagnostics
from offload.diagnostics import (
    AllocationNotAllowed,
    Diagnostic,
    OffloadError,
    Span,
    WriteNotAllowed,
)
from offload.frontend.source import get_source

pytestmark = pytest.mark.unit

A = np.zeros(4)


def three_kinds(i: int) -> Any:
    A[i] = 1.0
    xs = {i}
    print(i)
    return i


def test_three_violations_in_one_function_are_all_reported_in_one_error() -> None:
    diags = check_function(get_source(three_kinds))
    assert [d.rule for d in diags] == ["write", "allocation", "unresolved-call"]
    with pytest.raises(WriteNotAllowed) as info:
        raise_diagnostics(diags)
    assert info.value.diagnostics == tuple(diags)
    text = str(info.value)
    assert text.count(": error: ") == 3
    assert "writing to 'A'" in text and "set literals" in text and "print()" in text


def test_no_diagnostics_raises_nothing() -> None:
    raise_diagnostics([])


def test_diagnostics_sort_by_file_line_column_with_unlocated_last() -> None:
    def d(file: str, line: int, col: int) -> Diagnostic:
        return Diagnostic("m", Span(file, line, col, line, col + 1), "allocation")

    unlocated = Diagnostic("m", None, "write")
    ordered = sort_diagnostics([unlocated, d("b.py", 1, 0), d("a.py", 2, 5), d("a.py", 2, 1)])
    assert [(x.span.file, x.span.line, x.span.col) for x in ordered[:3] if x.span] == [
        ("a.py", 2, 1),
        ("a.py", 2, 5),
        ("b.py", 1, 0),
    ]
    assert ordered[3] is unlocated


def test_raised_class_is_the_first_diagnostics_class() -> None:
    def f(i: int) -> Any:
        return {i} if i else A.cumsum()

    with pytest.raises(OffloadError) as info:
        raise_diagnostics(check_function(get_source(f)))
    assert type(info.value) is AllocationNotAllowed
    assert len(info.value.diagnostics) == 2
