"""Kernel nesting does not grow with the source: ``if``/``elif`` chains of 100 and 300 arms
(Python's indentation limit is 100 levels) and ranks 21-64 on cpu-seq (Python allows 20
nested loops) compile; a body nested deeper than a kernel can hold is a located error.
Before the fix: an IndentationError/"too many statically nested blocks" internal error."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import offload as ol
from offload.cpu import CPU_SEQ
from offload.emit.flatten import MAX_LOOP_DEPTH
from offload.frontend.lower import lower
from offload.options import CompileOptions

pytestmark = pytest.mark.cpu


def _module(tmp_path: Path, name: str, text: str) -> ModuleType:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _chain(n: int) -> str:
    lines = ["def f(i):", f"    x = i % {n + 1}"]
    for k in range(n):
        lines.append(f"    {'if' if k == 0 else 'elif'} x == {k}:\n        y = {3 * k + 1}")
    lines.append("    else:\n        y = -1\n    return y\n")
    return "\n".join(lines)


def _indent_depth(src: str) -> int:
    return max((len(s) - len(s.lstrip(" "))) // 4 for s in src.splitlines() if s.strip())


@pytest.mark.parametrize("arms", [100, 300])
def test_long_elif_chain_emits_flat_kernel_source_that_computes_the_chain(tmp_path, arms):
    f = _module(tmp_path, f"chain{arms}", _chain(arms)).f
    src = CPU_SEQ.source(lower(f, 1).ir, CompileOptions())
    assert _indent_depth(src) < 10
    # the emitted kernel, run as plain Python, computes what the function computes
    ns: dict[str, Any] = {"np": np, "math": math, "prange": range}
    exec(compile(src, "<kernel>", "exec"), ns)
    out = np.zeros(arms + 2, np.int64)
    ns["kernel"](arms + 2, out, np.zeros(1, np.int64))
    assert out.tolist() == [f(i) for i in range(arms + 2)]


def test_elif_chain_of_100_arms_compiles_with_numba(tmp_path):
    f = _module(tmp_path, "chain100n", _chain(100)).f
    np.testing.assert_array_equal(ol.compute_s(103, f), [f(i) for i in range(103)])


@pytest.mark.parametrize("rank", [21, 32, 64])
def test_high_rank_index_space_compiles_on_cpu_seq(tmp_path, rank):
    names = ", ".join(f"i{k}" for k in range(rank))
    mod = _module(
        tmp_path,
        f"rank{rank}",
        f"def make(A):\n    def g({names}):\n        return A[{names}] * 2.0 + i0 - i{rank - 1}\n"
        "    return g\n",
    )
    shape = (2, 1, 3) + (1,) * (rank - 4) + (2,)
    a = np.arange(float(np.prod(shape))).reshape(shape)
    expected = a * 2.0 + np.arange(2).reshape((2,) + (1,) * (rank - 1))
    expected -= np.arange(2).reshape((1,) * (rank - 1) + (2,))
    targets = [ol.compute_s, ol.compute_p] if rank == 21 else [ol.compute_s]
    for compute in targets:
        np.testing.assert_array_equal(compute(shape, mod.make(a)), expected)


def test_loops_nested_deeper_than_a_kernel_holds_are_a_located_error(tmp_path):
    depth = MAX_LOOP_DEPTH + 1
    body = ["def f(i):", "    s = 0"]
    for k in range(depth):
        body.append("    " * (k + 1) + f"for k{k} in range(i):")
    body.append("    " * (depth + 1) + "s += 1")
    body.append("    return s\n")
    f = _module(tmp_path, "deep_loops", "\n".join(body)).f
    with pytest.raises(ol.UnsupportedSyntax, match="nested loops") as info:
        ol.compute_s(2, f)
    assert "deep_loops.py:1:" in str(info.value)
