"""``if``/``elif`` chains and deep nesting never end in an internal or unlocated error (issue
19 item 9). A chain of more than ``MAX_CHAIN_ARMS`` arms is a located error at the first arm
past the limit, however long the chain (before: a RecursionError inside numba from ~320 arms,
an unlocated "nested too deeply" from ~500, a raw RecursionError from ~1000); a chain at the
limit lowers and computes CPython's values; numba's compile gets recursion room for the
kernel it is given, and running out anyway is a located error about the function's size."""

from __future__ import annotations

import contextlib
import inspect
import math
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import offload as ol
import offload.emit.recursion
from offload.cpu import CPU_SEQ
from offload.frontend.lower import lower
from offload.frontend.stmt import MAX_CHAIN_ARMS
from offload.lowering import check_and_lower
from offload.options import CompileOptions
from tests.scripts import import_path


def _module(tmp_path: Path, name: str, text: str) -> ModuleType:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return import_path(path, name)


def _chain(arms: int, name: str = "f", scale: int = 1) -> str:
    """``def name(i)`` with an ``if``/``elif`` chain of ``arms`` arms; arm ``k`` (0-based) is
    on line ``3 + 2 * k``."""
    lines = [f"def {name}(i):", "    x = -1"]
    for k in range(arms):
        lines.append(f"    {'if' if k == 0 else 'elif'} i % {arms + 1} == {k}:")
        lines.append(f"        x = i * {scale * (k + 1)}")
    return "\n".join([*lines, "    return x", ""])


def _arm_line(k: int) -> int:
    return 3 + 2 * k


@pytest.mark.unit
@pytest.mark.parametrize("arms", [MAX_CHAIN_ARMS + 1, 2000])
def test_a_chain_past_the_limit_is_an_error_at_the_first_arm_past_it(tmp_path, arms):
    f = _module(tmp_path, f"chain{arms}", _chain(arms)).f
    with pytest.raises(ol.UnsupportedSyntax) as info:
        check_and_lower(f, 1)
    (diag,) = info.value.diagnostics
    assert diag.rule == "unsupported-syntax"
    assert f"at most {MAX_CHAIN_ARMS} arms; this is arm {MAX_CHAIN_ARMS + 1}" in diag.message
    assert "captured array" in diag.hint
    span = diag.span
    assert span is not None and span.file == str(tmp_path / f"chain{arms}.py")
    assert span.line == _arm_line(MAX_CHAIN_ARMS) and span.end_line == span.line
    assert span.text[span.col : span.end_col] == f"elif i % {arms + 1} == {MAX_CHAIN_ARMS}"


@pytest.mark.unit
def test_a_chain_past_the_limit_in_a_helper_is_located_there_with_a_call_site_note(tmp_path):
    text = _chain(MAX_CHAIN_ARMS + 1, name="helper") + "\n\ndef f(i):\n    return helper(i)\n"
    mod = _module(tmp_path, "chain_helper", text)
    with pytest.raises(ol.UnsupportedSyntax) as info:
        check_and_lower(mod.f, 1)
    (diag,) = info.value.diagnostics
    assert diag.span is not None and diag.span.line == _arm_line(MAX_CHAIN_ARMS)
    (note,) = diag.notes
    assert note.span is not None and note.span.text.strip() == "return helper(i)"


@pytest.mark.cpu
@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p], ids=["s", "p"])
def test_compute_reports_the_chain_limit_not_an_internal_error(tmp_path, compute):
    f = _module(tmp_path, "chain_api", _chain(MAX_CHAIN_ARMS + 20)).f
    with pytest.raises(ol.UnsupportedSyntax, match=f"at most {MAX_CHAIN_ARMS} arms") as info:
        compute(4, f)
    assert f"chain_api.py:{_arm_line(MAX_CHAIN_ARMS)}:5: error:" in str(info.value)
    assert "bug in offload" not in str(info.value)


@pytest.mark.unit
def test_a_chain_at_the_limit_lowers_to_a_kernel_that_computes_cpython_values(tmp_path):
    f = _module(tmp_path, "chain_max", _chain(MAX_CHAIN_ARMS)).f
    src = CPU_SEQ.source(lower(f, 1).ir, CompileOptions())
    ns: dict[str, Any] = {"np": np, "math": math, "prange": range}
    exec(compile(src, "<kernel>", "exec"), ns)
    n = MAX_CHAIN_ARMS + 2
    out = np.zeros(n, np.int64)
    ns["kernel"](n, out, np.zeros(1, np.int64))
    assert out.tolist() == [f(i) for i in range(n)]


def _sum_of(terms: int) -> str:
    return " + ".join(["i"] * terms)


@pytest.fixture
def default_recursion_limit() -> Iterator[None]:
    """Python's default recursion limit for the test (another test's thread holding
    ``recursion_room`` or a library may have raised it meanwhile: the deep expressions
    below are deep only against 1000 frames)."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


@pytest.mark.unit
def test_an_expression_too_deep_to_lower_is_an_error_at_its_statement(
    tmp_path, default_recursion_limit
):
    text = f"def f(i):\n    y = i\n    return {_sum_of(900)}\n"
    f = _module(tmp_path, "deep_expr", text).f
    with pytest.raises(ol.UnsupportedSyntax, match="nested too deeply") as info:
        check_and_lower(f, 1)
    (diag,) = info.value.diagnostics
    assert diag.span is not None and diag.span.line == 3
    assert diag.span.text[diag.span.col :].startswith("return i + i")


@pytest.mark.unit
def test_a_lambda_too_deep_to_lower_is_an_error_at_the_lambda(tmp_path, default_recursion_limit):
    f = _module(tmp_path, "deep_lambda", f"f = lambda i: {_sum_of(900)}\n").f
    with pytest.raises(ol.UnsupportedSyntax, match="nested too deeply") as info:
        check_and_lower(f, 1)
    (diag,) = info.value.diagnostics
    assert diag.span is not None and diag.span.line == 1
    assert diag.span.text[diag.span.col :].startswith("lambda")


# -- numba's compile ------------------------------------------------------------------------

COMPILE_ARMS = 60
"""A chain whose kernel compiles in about 2 s. Measured from the call: its lowering needs
about 150 frames, numba's compile of its kernel about 260 without the room it is given."""
HEADROOM = 200


@contextlib.contextmanager
def _headroom(frames: int) -> Iterator[None]:
    """A recursion limit ``frames`` above the caller's depth."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + frames)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


@pytest.fixture
def fresh_compile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty kernel disk cache, so that numba compiles; the backends warmed up (their
    lazy imports done) at the normal recursion limit."""
    monkeypatch.setattr(ol.config, "cache_dir", tmp_path / "cache")
    small = _module(tmp_path, "warm_up", _chain(2)).f
    ol.compute_s(3, small)
    ol.compute_p(3, small)


@pytest.mark.cpu
@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p], ids=["s", "p"])
def test_numba_compiles_a_long_chain_with_recursion_room_for_its_kernel(
    tmp_path: Path, fresh_compile: None, compute: Callable[..., Any]
) -> None:
    scale = 3 if compute is ol.compute_s else 5  # a kernel of its own for each test
    f = _module(tmp_path, "chain_room", _chain(COMPILE_ARMS, scale=scale)).f
    n = COMPILE_ARMS + 3
    with _headroom(HEADROOM):
        result = compute(n, f)
    np.testing.assert_array_equal(result, [f(i) for i in range(n)])


@pytest.mark.cpu
def test_numba_running_out_of_recursion_is_a_located_size_error_not_an_internal_one(
    tmp_path: Path, fresh_compile: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(offload.emit.recursion, "FRAMES_PER_LINE", 0)
    f = _module(tmp_path, "chain_no_room", _chain(COMPILE_ARMS, scale=7)).f
    with pytest.raises(ol.UnsupportedSyntax, match="too large for numba to compile") as info:
        with _headroom(HEADROOM):
            ol.compute_s(COMPILE_ARMS + 3, f)
    assert "chain_no_room.py:1:1: error:" in str(info.value)
    assert "bug in offload" not in str(info.value)


@pytest.mark.sim
@pytest.mark.skipif(not ol.config.gpu_simulator, reason="needs NUMBA_ENABLE_CUDASIM=1")
def test_a_chain_at_the_limit_runs_on_the_simulator(tmp_path):
    f = _module(tmp_path, "chain_sim", _chain(MAX_CHAIN_ARMS, scale=11)).f
    n = MAX_CHAIN_ARMS + 2
    np.testing.assert_array_equal(ol.compute_g(n, f), [f(i) for i in range(n)])
