"""Call resolution: intrinsics, helpers, getters; unresolvable calls and names reported."""
# ruff: noqa: E731, F821, PLC0415, F401

from __future__ import annotations

import math
import textwrap
from typing import Any

import numpy as np
import pytest

from offload.analysis.calls import CallKind, check_calls, resolve_calls
from offload.analysis.check import check_function
from offload.frontend.source import get_source
from tests.analysis import support
from tests.analysis.support import context, summary

pytestmark = pytest.mark.unit

A = np.arange(8.0)
_inc = lambda x: x + 1


def _kinds(fn: Any, *callable_params: str) -> list[tuple[str, CallKind]]:
    return [(c.name, c.kind) for c in resolve_calls(context(fn, *callable_params))]


def _calls(fn: Any, *callable_params: str) -> list[tuple[str, str]]:
    ctx = context(fn, *callable_params)
    return summary(check_calls(ctx, resolve_calls(ctx)))


def test_intrinsics_of_every_kind_resolve() -> None:
    def f(i: int) -> Any:
        return min(i, 2) + math.sqrt(i) + np.sqrt(A[i]) + np.float32(i) + math.floor(1.5)

    kinds = _kinds(f)
    assert kinds == [
        ("min", CallKind.INTRINSIC),
        ("math.sqrt", CallKind.INTRINSIC),
        ("np.sqrt", CallKind.INTRINSIC),
        ("np.float32", CallKind.INTRINSIC),
        ("math.floor", CallKind.INTRINSIC),
    ]
    assert _calls(f) == []


def test_module_level_functions_lambdas_and_module_attributes_are_helpers() -> None:
    def f(i: int) -> Any:
        return _inc(i) + support.covered.__code__.co_argcount + support.summary(i)

    kinds = _kinds(f)
    assert ("_inc", CallKind.HELPER) in kinds
    assert ("support.summary", CallKind.HELPER) in kinds


def test_library_python_functions_are_not_inlined_as_helpers() -> None:
    def f(i: int) -> Any:
        return textwrap.dedent(i)

    assert _kinds(f) == [("textwrap.dedent", CallKind.UNRESOLVED)]
    assert _calls(f) == [("unresolved-call", "textwrap.dedent(i)")]


def test_element_getter_parameter_is_callable_only_when_declared() -> None:
    def f(get: Any, i: int) -> Any:
        return get(i - 1) + get(i + 1)

    assert _calls(f, "get") == []
    assert _calls(f) == [("unresolved-call", "get(i - 1)"), ("unresolved-call", "get(i + 1)")]


def test_keyword_arguments_to_helpers_are_allowed_but_not_to_intrinsics() -> None:
    def f(i: int) -> Any:
        return support.summary(diags=i) + max(i, 1, key=abs)

    assert _calls(f) == [("unsupported-syntax", "key=abs")]


def test_missing_module_attribute_and_undefined_root_are_one_diagnostic_each() -> None:
    def f(i: int) -> Any:
        return math.nosuch(i) + undefined_module.fn(i)

    ctx = context(f)
    diags = check_calls(ctx, resolve_calls(ctx))
    assert summary(diags) == [
        ("unresolved-call", "math.nosuch(i)"),
        ("unresolved-call", "undefined_module.fn(i)"),
    ]
    assert "'math.nosuch' does not exist" in diags[0].message
    assert "name 'undefined_module' is not defined" in diags[1].message


def test_uses_of_an_import_or_local_lambda_inside_the_kernel_do_not_cascade() -> None:
    def f(i: int) -> Any:
        import cmath

        g = lambda x: x
        return cmath.sqrt(i) + g(i)

    diags = check_function(get_source(f))
    assert [d.rule for d in diags] == ["unsupported-syntax", "allocation"]


def test_wrong_number_of_arguments_to_an_intrinsic() -> None:
    def f(i: int) -> Any:
        return abs(i, 2) + divmod(i, 2)[0]

    assert _calls(f) == [("unsupported-syntax", "abs(i, 2)")]
