"""The ``@expect`` registry of the invalid corpus.

Each case is a real function in a real file (so spans are real). ``@expect`` records one
diagnostic the restriction analysis must report for it: the error class (and so the rule),
the 1-based line and column as rendered (``file:line:col``), and the exact text the caret
covers. Stack several ``@expect`` for a function with several violations: the analysis must
report exactly those, no more. The expectations are written by hand and checked against the
analysis by tests/analysis/test_corpus.py, so a wrong span fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from offload.diagnostics import OffloadError

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Expected:
    """One diagnostic the analysis must report."""

    error: type[OffloadError]
    line: int
    col: int
    """1-based character column, as rendered in ``file:line:col``."""
    caret: str
    """The source text the ``^^^`` range covers."""
    notes: tuple[tuple[int, str], ...] = ()
    """(line, message) of notes that must be attached, in order."""


@dataclass
class Case:
    """One invalid element function and every diagnostic expected for it."""

    name: str
    fn: Callable[..., Any]
    expected: list[Expected] = field(default_factory=list)

    def __repr__(self) -> str:
        return self.name


CASES: list[Case] = []
_BY_FN: dict[int, Case] = {}


def expect(
    error: type[OffloadError],
    *,
    line: int,
    col: int,
    caret: str,
    notes: tuple[tuple[int, str], ...] = (),
) -> Callable[[F], F]:
    """Register ``fn`` as an invalid case expected to report this diagnostic."""

    def register(fn: F) -> F:
        case = _BY_FN.get(id(fn))
        if case is None:
            module = fn.__module__.rsplit(".", 1)[-1]
            name = fn.__name__ if fn.__name__ != "<lambda>" else f"lambda@{line}"
            case = Case(f"{module}.{name}", fn)
            _BY_FN[id(fn)] = case
            CASES.append(case)
        case.expected.append(Expected(error, line, col, caret, notes))
        case.expected.sort(key=lambda e: (e.line, e.col))
        return fn

    return register
