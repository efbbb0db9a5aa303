"""The syntax allowlist: unsupported constructs are reported at the construct, once."""
# ruff: noqa: F841, B018, PLR0124, PLW0120, E731, PLC0415

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload.analysis.syntax import check_syntax
from tests.analysis.support import context, summary
from tests.analysis.test_valid_subset import every_construct

pytestmark = pytest.mark.unit

A = np.arange(8.0)
M = np.eye(2)


def _syntax(fn: Any) -> list[tuple[str, str]]:
    return summary(check_syntax(context(fn)))


def test_every_allowed_construct_passes_the_allowlist() -> None:
    assert _syntax(every_construct) == []


def test_matmul_is_left_to_the_frontend_which_knows_the_operands() -> None:
    def f(i: int) -> Any:
        return (M @ M)[i, 0]

    assert _syntax(f) == []


def test_is_comparison_is_reported_once_at_the_comparison() -> None:
    def f(i: int) -> Any:
        return 1 if i is not A else 0

    assert _syntax(f) == [("unsupported-syntax", "i is not A")]


def test_complex_and_ellipsis_constants_are_unsupported_types() -> None:
    def f(i: int) -> Any:
        z = 1j
        e = ...
        return i

    diags = check_syntax(context(f))
    assert summary(diags) == [("unsupported-syntax", "1j"), ("unsupported-syntax", "...")]
    assert "complex numbers" in diags[0].message


def test_keyword_only_and_double_star_parameters_are_reported_at_their_names() -> None:
    def f(i: int, *, k: int = 1, **rest: Any) -> Any:
        return i

    assert _syntax(f) == [("unsupported-syntax", "rest"), ("unsupported-syntax", "k")]


def test_loop_variable_must_be_names() -> None:
    def f(i: int) -> Any:
        for M.x in range(i):
            pass
        return i

    assert _syntax(f) == [("unsupported-syntax", "M.x")]


def test_loops_over_zip_enumerate_and_views_are_syntax() -> None:
    def f(i: int) -> Any:
        for s, (k, b) in zip(M[i], enumerate(M[:, i])):
            pass
        for x in reversed(M[i]):
            pass
        else:
            pass
        return i

    assert _syntax(f) == []


def test_statements_inside_a_rejected_try_block_are_still_checked() -> None:
    def f(i: int) -> Any:
        try:
            x = A[1:2]
        except IndexError:
            x = i is None
        return x

    assert _syntax(f) == [
        ("unsupported-syntax", "try"),
        ("unsupported-syntax", "i is None"),
        ("unsupported-syntax", "None"),
    ]


def test_nothing_inside_a_nested_function_cascades() -> None:
    def f(i: int) -> Any:
        def inner() -> Any:
            import os

            return os.getpid()

        return i

    assert _syntax(f) == [("unsupported-syntax", "def inner")]


def test_async_nested_function_is_reported_at_async_def() -> None:
    def f(i: int) -> Any:
        async def inner() -> None:
            pass

        return i

    assert _syntax(f) == [("unsupported-syntax", "async def")]


def test_list_unpacking_target_is_syntax_not_allocation() -> None:
    def f(i: int) -> Any:
        [a, b] = (i, i)
        return a + b

    assert _syntax(f) == [("unsupported-syntax", "[a, b]")]


def test_slices_are_views_not_syntax_errors() -> None:
    def f(i: int) -> Any:
        return M[i, :][0] + M[i, ::-1][1:][0]

    assert _syntax(f) == []
