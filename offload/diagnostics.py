"""Source spans and the error family every stage raises.

A ``Span`` locates a construct in the user's source (1-based line, 0-based *character*
column, end exclusive). ``OffloadError`` renders one or more ``Diagnostic``s as::

    kernels.py:14:12: error: recursion is not allowed in element functions [recursion]
        return fib(n - 1) + fib(n - 2)
               ^^^^^^^^^^
    hint: rewrite it as a loop
    kernels.py:9:1: note: 'fib' is defined here
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Span:
    """A range of characters in one source file."""

    file: str
    """Path (or ``<stdin>``-like pseudo name) of the file."""
    line: int
    """1-based first line."""
    col: int
    """0-based character (not byte) column on ``line``."""
    end_line: int
    """1-based last line."""
    end_col: int
    """0-based character column one past the end on ``end_line``."""
    text: str = ""
    """The source line ``line`` (without newline), for rendering; may be empty."""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


@dataclass(frozen=True)
class Note:
    """A secondary location, e.g. the call site of an inlined helper."""

    message: str
    span: Span | None = None


@dataclass(frozen=True)
class Diagnostic:
    """One violation: where, what rule, what to do about it."""

    message: str
    span: Span | None
    rule: str
    """Short rule id, e.g. ``recursion``, ``allocation``, ``unsupported-syntax``."""
    hint: str = ""
    notes: tuple[Note, ...] = ()

    def render(self) -> str:
        lines: list[str] = []
        where = f"{self.span}: " if self.span is not None else ""
        lines.append(f"{where}error: {self.message} [{self.rule}]")
        if self.span is not None:
            lines.extend(_caret_lines(self.span))
        if self.hint:
            lines.append(f"hint: {self.hint}")
        for note in self.notes:
            nwhere = f"{note.span}: " if note.span is not None else ""
            lines.append(f"{nwhere}note: {note.message}")
            if note.span is not None:
                lines.extend(_caret_lines(note.span))
        return "\n".join(lines)


def _caret_lines(span: Span) -> list[str]:
    if not span.text:
        return []
    text = span.text.rstrip("\n")
    end = span.end_col if span.end_line == span.line else len(text)
    end = max(end, span.col + 1)
    indent = "    "
    # Under the text, the caret's lead keeps each tab and gives a wide character (CJK) two
    # columns, as a terminal shows the line above it.
    lead = "".join("\t" if c == "\t" else " " * _width(c) for c in text[: span.col])
    marks = "^" * max(1, sum(_width(c) for c in text[span.col : end]))
    return [indent + text, indent + lead + marks]


def _width(c: str) -> int:
    return 2 if unicodedata.east_asian_width(c) in "WF" else 1


class OffloadError(Exception):
    """Base of every error offload reports about a user's program or its use of the API."""

    rule = "error"

    def __init__(self, message: str | None = None, *, diagnostics: tuple[Diagnostic, ...] = ()):
        self.diagnostics: tuple[Diagnostic, ...] = diagnostics
        if message is None:
            message = "\n".join(d.render() for d in diagnostics)
        self.message = message
        super().__init__(message)

    @classmethod
    def at(
        cls,
        message: str,
        span: Span | None,
        *,
        hint: str = "",
        notes: tuple[Note, ...] = (),
        rule: str | None = None,
    ) -> OffloadError:
        """An error of this class with one located diagnostic."""
        diag = Diagnostic(message, span, rule or cls.rule, hint, notes)
        return cls(diagnostics=(diag,))


def unlocated(err: OffloadError) -> Diagnostic | None:
    """``err``'s one diagnostic where it has no location at all (no span, no note): the
    caller that knows where the mistake is may report it there; else ``None``."""
    d = err.diagnostics[0] if len(err.diagnostics) == 1 else None
    return d if d is not None and d.span is None and not d.notes else None


class UnsupportedSyntax(OffloadError):
    rule = "unsupported-syntax"


class RecursionNotAllowed(OffloadError):
    rule = "recursion"


class AllocationNotAllowed(OffloadError):
    rule = "allocation"


class WriteNotAllowed(OffloadError):
    rule = "write"


class UnresolvedCall(OffloadError):
    rule = "unresolved-call"


class TypeMismatch(OffloadError):
    rule = "type"


class SourceUnavailable(OffloadError):
    rule = "no-source"


class CompileError(OffloadError):
    """A backend failed to compile a program the frontend accepted (a bug in offload)."""

    rule = "compile"


class GPUUnavailable(OffloadError):
    rule = "no-gpu"


class KernelFault(OffloadError):
    """A kernel faulted at run time (driver error, out-of-bounds read with bounds_check)."""

    rule = "kernel-fault"


@dataclass
class DiagnosticSink:
    """Collects diagnostics so that all violations of a function are reported together."""

    diagnostics: list[Diagnostic] = field(default_factory=list[Diagnostic])

    def add(self, diag: Diagnostic) -> None:
        self.diagnostics.append(diag)

    def raise_if_any(self) -> None:
        """Raise the error class of the first diagnostic, carrying all of them."""
        if not self.diagnostics:
            return
        cls = ERROR_CLASSES.get(self.diagnostics[0].rule, OffloadError)
        raise cls(diagnostics=tuple(self.diagnostics))


ERROR_CLASSES: dict[str, type[OffloadError]] = {
    c.rule: c
    for c in (
        UnsupportedSyntax,
        RecursionNotAllowed,
        AllocationNotAllowed,
        WriteNotAllowed,
        UnresolvedCall,
        TypeMismatch,
        SourceUnavailable,
    )
}
