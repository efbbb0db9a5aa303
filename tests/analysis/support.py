"""Small helpers shared by the analysis tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from offload.analysis.walk import FunctionContext
from offload.diagnostics import Diagnostic
from offload.frontend.source import get_source


def context(fn: Callable[..., Any], *callable_params: str) -> FunctionContext:
    """The analysis context of ``fn`` (its locals and kernel nodes)."""
    return FunctionContext.of(get_source(fn), frozenset(callable_params))


def covered(diag: Diagnostic) -> str:
    """The source text under the diagnostic's caret."""
    assert diag.span is not None
    assert diag.span.line == diag.span.end_line
    return diag.span.text[diag.span.col : diag.span.end_col]


def summary(diags: list[Diagnostic]) -> list[tuple[str, str]]:
    """(rule, covered text) of each diagnostic."""
    return [(d.rule, covered(d)) for d in diags]
