"""Every invalid corpus function is rejected with exactly the diagnostics it declares: error
class, rule, file:line:col, the caret under the source line, a hint, the call-site notes,
and a rendered message free of compiler internals."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import offload
from offload.analysis.check import check_function, raise_diagnostics
from offload.diagnostics import ERROR_CLASSES, Diagnostic, OffloadError
from offload.frontend.source import get_source
from tests.corpus.invalid import CASES, Case, Expected

pytestmark = pytest.mark.unit

OFFLOAD_DIR = str(Path(offload.__file__).resolve().parent)


def _check(case: Case) -> list[Diagnostic]:
    return check_function(get_source(case.fn))


def _caret_block(diag: Diagnostic, exp: Expected) -> list[str]:
    """The two lines the renderer must print under the location line."""
    assert diag.span is not None
    source_line = diag.span.text
    col0 = exp.col - 1
    assert source_line[col0 : col0 + len(exp.caret)] == exp.caret, (
        f"the expectation's caret text {exp.caret!r} is not at column {exp.col} of {source_line!r}"
    )
    return ["    " + source_line, "    " + " " * col0 + "^" * len(exp.caret)]


def test_corpus_has_at_least_45_cases_covering_every_rule() -> None:
    assert len(CASES) >= 45
    rules = {e.error.rule for case in CASES for e in case.expected}
    assert {"recursion", "allocation", "write", "unsupported-syntax", "unresolved-call"} <= rules


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_invalid_function_reports_exactly_its_declared_diagnostics(case: Case) -> None:
    diags = _check(case)
    file = inspect.getsourcefile(case.fn)
    assert file is not None
    got = [(d.rule, d.span.line if d.span else 0, d.span.col + 1 if d.span else 0) for d in diags]
    want = [(e.error.rule, e.line, e.col) for e in case.expected]
    assert got == want, "\n".join(d.render() for d in diags)
    for diag, exp in zip(diags, case.expected, strict=True):
        assert ERROR_CLASSES[diag.rule] is exp.error
        assert diag.span is not None
        assert Path(diag.span.file).resolve() == Path(file).resolve()
        rendered = diag.render().splitlines()
        assert rendered[0].startswith(f"{diag.span.file}:{exp.line}:{exp.col}: error: ")
        assert rendered[0].endswith(f"[{exp.error.rule}]")
        assert rendered[1:3] == _caret_block(diag, exp)
        assert diag.hint, f"no hint for: {diag.message}"
        assert any(line.startswith("hint: ") for line in rendered)
        if exp.notes:
            notes = [(n.span.line if n.span else 0, n.message) for n in diag.notes]
            assert notes == list(exp.notes)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_raised_error_carries_all_diagnostics_without_compiler_internals(case: Case) -> None:
    diags = _check(case)
    with pytest.raises(OffloadError) as info:
        raise_diagnostics(diags)
    err = info.value
    assert type(err) is case.expected[0].error
    assert err.rule == case.expected[0].error.rule
    assert len(err.diagnostics) == len(case.expected)
    text = str(err)
    assert OFFLOAD_DIR not in text
    assert "Traceback" not in text
    assert "numba" not in text.lower()
