"""Diagnostics name the most specific reason first, once (issue 17 item 9): a loop over
``zip`` is no longer a "range loop" error plus an allocation; ``complex(x, y)`` is "complex
numbers are not supported", not an allocation; one diagnostic per source range."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload.analysis.check import check_function, most_specific, sort_diagnostics
from offload.diagnostics import Diagnostic, OffloadError, Span, UnsupportedSyntax
from offload.frontend.source import get_source
from offload.lowering import check_and_lower

pytestmark = pytest.mark.unit

X = np.arange(4.0)
Y = np.arange(4.0) * 2


def zip_loop(i: int) -> Any:
    t = 0.0
    for s, b in zip(X, Y):
        t += s * b
    return t + i


def complex_call(i: int) -> Any:
    z = complex(X[i], Y[i])
    return z.real


def complex_literal(i: int) -> Any:
    return 1j * i


def _diags(fn: Any) -> list[tuple[str, str]]:
    return [(d.rule, d.message) for d in check_function(get_source(fn))]


def test_a_loop_over_zip_is_in_the_subset() -> None:
    assert _diags(zip_loop) == []
    assert check_and_lower(zip_loop, 1).ir is not None


def test_complex_call_is_reported_once_as_complex_numbers() -> None:
    assert _diags(complex_call) == [
        ("unsupported-syntax", "complex numbers are not supported in element functions")
    ]
    with pytest.raises(UnsupportedSyntax) as err:
        check_and_lower(complex_call, 1)
    text = str(err.value)
    assert "allocat" not in text and "complex(X[i], Y[i])" in text and "^" in text


def test_complex_literal_message_is_plural() -> None:
    assert _diags(complex_literal) == [
        ("unsupported-syntax", "complex numbers are not supported in element functions")
    ]


def _at(col: int, rule: str, message: str, end: int = 9) -> Diagnostic:
    return Diagnostic(message, Span("k.py", 3, col, 3, end, "    x = f(y)"), rule, "hint")


def test_one_diagnostic_per_range_the_most_specific_rule() -> None:
    general = _at(8, "allocation", "constructing an object allocates")
    specific = _at(8, "unsupported-syntax", "complex numbers are not supported")
    elsewhere = _at(4, "allocation", "list literals allocate", end=5)
    assert most_specific([general, specific, general, elsewhere]) == [specific, elsewhere]
    assert sort_diagnostics([general, elsewhere, specific]) == [elsewhere, specific]


def test_all_violations_still_reported_in_reading_order() -> None:
    def f(i: int) -> Any:
        xs = {i}  # a set: an allocation (a list display is a local array now)
        X[0] = 1.0
        return complex(i, i) + len(xs)

    rules = [rule for rule, _ in _diags(f)]
    assert rules == ["allocation", "write", "unsupported-syntax"]
    with pytest.raises(OffloadError) as err:
        check_and_lower(f, 1)
    assert str(err.value).count("error:") == 3
