"""The frontend's own errors: the right class, at the right place, with a hint."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from offload.diagnostics import (
    OffloadError,
    RecursionNotAllowed,
    TypeMismatch,
    UnresolvedCall,
    UnsupportedSyntax,
    WriteNotAllowed,
)
from offload.frontend.lower import lower
from offload.lowering import check_and_lower

pytestmark = pytest.mark.unit

A = np.zeros((3, 4))
FILE = __file__


def float_index(i: int) -> Any:
    return A[i * 0.5, 0]


def wrong_index_count(i: int) -> Any:
    return A[i, 0, 1]


def unbound_name(i: int) -> Any:
    return i + not_defined_anywhere  # type: ignore[name-defined]  # noqa: F821


def wrong_unpack(i: int) -> Any:
    a, b, c = i, i
    return a + b + c


def _two_args(x: Any, y: Any) -> Any:
    return x + y


def helper_arg_count(i: int) -> Any:
    return _two_args(i)


def tuple_vs_scalar(i: int) -> Any:
    if i > 0:
        return i, i
    return i


def kinds_differ(i: int) -> Any:
    v = (i, i) if i > 0 else i
    return v[0]


def writes_array(i: int) -> Any:
    A[i, 0] = 1.0
    return 0


def uses_with(i: int) -> Any:
    with open(FILE):
        return i


def _fact(n: Any) -> Any:
    return 1 if n <= 1 else n * _fact(n - 1)


def recursive(i: int) -> Any:
    return _fact(i)


def _bad_helper(x: Any) -> Any:
    return A[x]


def error_inside_helper(i: int) -> Any:
    return _bad_helper(i)


def calls_print(i: int) -> Any:
    print(i)
    return i


def maybe_unbound(i: int) -> Any:
    if i > 0:
        y = 1
    return y


def no_return(i: int) -> Any:
    x = i + 1  # noqa: F841


def bool_subtract(i: int) -> Any:
    return np.bool_(i) - np.bool_(i)


def slicing(i: int) -> Any:
    return A[i, 1:2]


CASES: list[tuple[Callable[..., Any], type[OffloadError], str, str]] = [
    (float_index, TypeMismatch, "i * 0.5", "array indices must be integers"),
    (wrong_index_count, TypeMismatch, "A[i, 0, 1]", "has 2 dimensions but 3 indices"),
    (unbound_name, UnresolvedCall, "not_defined_anywhere", "is not defined"),
    (wrong_unpack, TypeMismatch, "a, b, c", "cannot unpack a tuple of 2 into 3"),
    (helper_arg_count, TypeMismatch, "_two_args(i)", "is missing the argument 'y'"),
    (tuple_vs_scalar, TypeMismatch, "def tuple_vs_scalar", "do not agree"),
    (kinds_differ, TypeMismatch, "(i, i) if i > 0 else i", "(a number and a tuple of 2)"),
    (uses_with, UnsupportedSyntax, "with open(FILE):", "'With' syntax is not supported"),
    (recursive, RecursionNotAllowed, "_fact(n - 1)", "recursion is not allowed"),
    (error_inside_helper, TypeMismatch, "A[x]", "cannot return a view"),
    (calls_print, UnresolvedCall, "print", "cannot call 'print'"),
    (maybe_unbound, TypeMismatch, "y", "not assigned on every path"),
    (no_return, TypeMismatch, "def no_return", "without returning a value"),
    (bool_subtract, TypeMismatch, "np.bool_(i) - np.bool_(i)", "unsupported operand types"),
    (slicing, TypeMismatch, "A[i, 1:2]", "cannot return a view"),
]


@pytest.mark.parametrize(
    ("fn", "cls", "snippet", "message"), CASES, ids=[c[0].__name__ for c in CASES]
)
def test_error_has_class_message_and_span_of_the_offending_node(
    fn: Callable[..., Any], cls: type[OffloadError], snippet: str, message: str
) -> None:
    with pytest.raises(cls) as info:
        lower(fn, 1)
    diag = info.value.diagnostics[0]
    assert message in diag.message
    assert diag.span is not None and diag.span.file == FILE
    assert diag.rule == cls.rule
    line = diag.span.text
    assert line[diag.span.col :].startswith(snippet)


def test_write_to_an_array_is_reported_by_the_checks_that_run_before_lowering() -> None:
    with pytest.raises(WriteNotAllowed) as info:
        check_and_lower(writes_array, 1)
    diag = info.value.diagnostics[0]
    assert "writing to 'A' is not allowed" in diag.message
    assert diag.span is not None and diag.span.file == FILE
    assert diag.span.text[diag.span.col :].startswith("A[i, 0]")


def test_error_inside_helper_has_a_note_at_the_call_site() -> None:
    with pytest.raises(TypeMismatch) as info:
        lower(error_inside_helper, 1)
    (note,) = info.value.diagnostics[0].notes
    assert note.span is not None
    assert note.span.text[note.span.col :].startswith("_bad_helper(i)")
    assert "_bad_helper" in note.message


def test_rendered_error_shows_file_line_column_and_caret() -> None:
    with pytest.raises(TypeMismatch) as info:
        lower(float_index, 1)
    text = str(info.value)
    span = info.value.diagnostics[0].span
    assert span is not None
    assert f"{FILE}:{span.line}:{span.col + 1}: error:" in text
    assert "        return A[i * 0.5, 0]\n                 ^^^^^^^\n" in text
    assert "hint: convert with int(...)" in text


def test_wrong_rank_is_reported_at_the_definition() -> None:
    with pytest.raises(TypeMismatch, match=r"takes 1 index argument\(s\) but the shape has rank 2"):
        lower(float_index, 2)


def test_missing_return_value_hint_mentions_every_path() -> None:
    with pytest.raises(TypeMismatch) as info:
        lower(no_return, 1)
    assert "every path" in info.value.diagnostics[0].hint


def test_builtin_object_is_not_an_element_function() -> None:
    with pytest.raises(OffloadError, match="plain Python function"):
        lower(len, 1)


def test_range_step_zero_is_rejected() -> None:
    def zero_step(i: int) -> Any:
        s = 0
        for k in range(0, 4, 0):
            s += k
        return s

    with pytest.raises(TypeMismatch, match="step must not be zero"):
        lower(zero_step, 1)


def test_variable_changing_kind_in_loop_is_rejected() -> None:
    def kind_change(i: int) -> Any:
        x = 0
        for _ in range(i):
            x = (x, x)
        return 0

    with pytest.raises(TypeMismatch, match="changes its kind"):
        lower(kind_change, 1)


B = np.ones(3)


def test_rebinding_an_array_inside_a_loop_is_rejected() -> None:
    def rebinds(i: int) -> Any:
        arr = A
        s = 0.0
        for _ in range(i):
            s += arr[0, 0]
            arr = B
        return s

    with pytest.raises(TypeMismatch, match="rebound inside this loop"):
        lower(rebinds, 1)


def _huge(i):
    return i + 2**70


def test_constant_expression_beyond_int64_is_a_located_error():
    with pytest.raises(TypeMismatch) as info:
        lower(_huge, 1)
    message = str(info.value)
    assert "2 ** 70 = 1180591620717411303424 does not fit int64" in message
    assert "test_errors.py" in message and "^^^^^" in message


_U8 = np.arange(4, dtype=np.uint8)


def _u8_and_negative(i):
    return _U8[i] & -2


def test_python_int_that_its_numpy_partner_cannot_hold_is_a_located_error():
    # NumPy 2 (NEP 50) raises OverflowError for np.uint8(1) & -2; so do we, at compile time.
    with pytest.raises(TypeMismatch, match="the Python int -2 does not fit uint8"):
        lower(_u8_and_negative, 1)


def _np_power_negative_exponent(i):
    return np.power(i, i - 3)


def _np_power_negative_constant(i):
    return np.power(np.int32(i), -1)


@pytest.mark.parametrize("fn", [_np_power_negative_exponent, _np_power_negative_constant])
def test_numpy_integer_power_with_a_possibly_negative_exponent_is_a_located_error(fn):
    # NumPy raises ValueError for integers to negative integer powers; so do we, statically.
    with pytest.raises(TypeMismatch, match="exponent that may be negative") as info:
        lower(fn, 1)
    assert "test_errors.py" in str(info.value)


def _u8_plus_out_of_range(i):
    return _U8[i] + 300


def test_arithmetic_with_an_out_of_range_python_int_stays_a_located_error():
    # Comparisons are exact (NumPy 2), but arithmetic raises OverflowError in NumPy.
    with pytest.raises(TypeMismatch, match="the Python int 300 does not fit uint8"):
        lower(_u8_plus_out_of_range, 1)


def test_the_caret_lines_up_under_tabs_and_wide_characters() -> None:
    from offload.diagnostics import Diagnostic, Span

    tab = Span("f.py", 3, 8, 3, 11, "\treturn {i}")
    assert Diagnostic("m", tab, "r").render().splitlines()[1:3] == [
        "    \treturn {i}",
        "    \t       ^^^",
    ]
    wide = Span("f.py", 1, 19, 1, 23, "    日本 = i; return {日本}")
    lines = Diagnostic("m", wide, "r").render().splitlines()
    assert lines[2] == "    " + " " * 21 + "^" * 6  # 日本 is two columns each
