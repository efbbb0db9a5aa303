"""The restriction checks of DESIGN §2, run together over an element function and every
helper it reaches, so that all violations are reported at once.

    diags = check_function(get_source(fn))
    raise_diagnostics(diags)        # raises the first one's OffloadError class, with all

Each concern is its own module: syntax.py (allowlist), allocation.py, writes.py,
calls.py (call and name resolution), callgraph.py (helpers reached; recursion).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import replace

from offload.analysis.allocation import check_allocation
from offload.analysis.callgraph import build_call_graph, check_recursion
from offload.analysis.calls import check_calls
from offload.analysis.syntax import check_syntax
from offload.analysis.writes import check_writes
from offload.diagnostics import Diagnostic, DiagnosticSink
from offload.frontend.source import FunctionSource


def check_function(
    src: FunctionSource, *, callable_params: Collection[str] = ()
) -> list[Diagnostic]:
    """Every restriction violation of ``src`` and of the helpers it calls, sorted by
    file, line and column. Empty when the function is in the subset. Never raises for bad
    user code: problems in the user's program are returned as diagnostics.

    ``callable_params`` names parameters that the API binds to callables (the element
    getter a ``traverse`` function receives); calls through them are allowed.
    """
    graph = build_call_graph(src, frozenset(callable_params))
    diags: list[Diagnostic] = list(graph.problems)
    for fn, reached in graph.nodes.items():
        ctx = reached.ctx
        found = [
            *check_syntax(ctx),
            *check_allocation(ctx, reached.calls),
            *check_writes(ctx),
            *check_calls(ctx, reached.calls),
        ]
        notes = graph.path_notes(fn)
        diags.extend(replace(d, notes=d.notes + notes) if notes else d for d in found)
    diags.extend(check_recursion(graph))
    return sort_diagnostics(diags)


SPECIFICITY = ("recursion", "write", "unsupported-syntax", "unresolved-call", "allocation")
"""Rules from the most specific to the most general: where several analyses report the
same expression (``complex(x, y)``: complex numbers, and constructing an object), only the
most specific diagnostic is kept."""


def most_specific(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """One diagnostic per source range: the most specific rule's, each message once."""
    best: dict[object, Diagnostic] = {}
    unlocated: list[Diagnostic] = []
    for d in diags:
        s = d.span
        if s is None:
            if d not in unlocated:
                unlocated.append(d)
            continue
        key = (s.file, s.line, s.col, s.end_line, s.end_col)
        held = best.get(key)
        if held is None or _rank(d) < _rank(held):
            best[key] = d
    return [*best.values(), *unlocated]


def _rank(d: Diagnostic) -> int:
    return SPECIFICITY.index(d.rule) if d.rule in SPECIFICITY else len(SPECIFICITY)


def sort_diagnostics(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics in reading order: file, line, column (unlocated ones last); one per
    source range, the most specific (``most_specific``)."""
    diags = most_specific(diags)

    def key(d: Diagnostic) -> tuple[int, str, int, int, str, str]:
        s = d.span
        if s is None:
            return (1, "", 0, 0, d.rule, d.message)
        return (0, s.file, s.line, s.col, d.rule, d.message)

    return sorted(diags, key=key)


def raise_diagnostics(diags: Iterable[Diagnostic]) -> None:
    """Raise the ``OffloadError`` subclass of the first diagnostic, carrying all of them;
    do nothing when there are none."""
    sink = DiagnosticSink()
    for diag in diags:
        sink.add(diag)
    sink.raise_if_any()
