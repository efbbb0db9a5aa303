"""Emitter golden tests: the exact Python source emitted for small IR functions."""

# ruff: noqa: E501  (golden kernel text keeps its real line lengths)

from __future__ import annotations

import ast

import pytest

from offload.diagnostics import CompileError
from offload.emit import emit_body, emit_source, print_source
from offload.ir import Builder, Opcode
from offload.ir.types import F32
from tests.emit.irfuncs import ArrayHooks, running_sum, straight_line

pytestmark = pytest.mark.unit

STRAIGHT = """\
# offload: kern.py:2
x_3 = c0[i0]
v_4 = np.float32(0.5)
v_5 = x_3 * v_4
# offload: kern.py:3
v_6 = np.int64(3)
_t7k0 = np.uint64(0) - np.uint64(c1 < np.int64(0))
v_7 = np.int64((np.uint64(c1) ^ _t7k0) // np.uint64(3) ^ _t7k0)
v_8 = np.float32(v_7)
v_9 = v_5 + v_8
out0[0] = v_9
"""

LOOP = """\
k_5 = np.int64(0)
x_6 = np.float32(0.0)
y_7 = np.float32(0.0)
# offload: kern.py:2
v_3 = np.int64(0)
v_4 = np.float32(0.0)
k_5, x_6, y_7 = (v_3, v_4, v_4)
while True:
    # offload: kern.py:3
    v_8 = k_5 < i1
    if not v_8:
        break
    # offload: kern.py:4
    v_9 = c0[i0, k_5]
    v_10 = x_6 + v_9
    v_11 = np.int64(1)
    v_12 = np.int64(np.uint64(k_5) + np.uint64(v_11))
    k_5, x_6, y_7 = (v_12, y_7, v_10)
# offload: kern.py:5
v_13 = x_6 + y_7
out0[0] = v_13
"""


def test_single_block_function_becomes_straight_line_code_with_line_comments() -> None:
    fn = straight_line()
    assert print_source(emit_body(fn, ArrayHooks(fn))) == STRAIGHT


def test_loop_becomes_while_loop_with_parallel_block_argument_assignment() -> None:
    fn = running_sum()
    assert print_source(emit_body(fn, ArrayHooks(fn))) == LOOP


def test_emission_is_deterministic_across_fresh_builds() -> None:
    texts = {print_source(emit_body(f, ArrayHooks(f))) for f in (running_sum(), running_sum())}
    assert len(texts) == 1


def test_emit_source_wraps_body_and_parses_as_python() -> None:
    fn = straight_line()

    def wrap(body: list[ast.stmt]) -> list[ast.stmt]:
        args = ast.arguments(
            [], [ast.arg(n) for n in ("i0", "c0", "c1", "out0")], None, [], [], None, []
        )
        return [ast.FunctionDef(name="k", args=args, body=body, decorator_list=[], lineno=0)]

    text = emit_source(fn, ArrayHooks(fn), wrap)
    assert text.startswith("import math\nimport numpy as np\n")
    tree = ast.parse(text)
    assert isinstance(tree.body[-1], ast.FunctionDef)
    assert "    # offload: kern.py:3\n" in text


def test_block_without_terminator_is_a_compile_error() -> None:
    b = Builder("open", 0)
    b.const(1.0, F32)
    with pytest.raises(CompileError):
        emit_body(b.function, ArrayHooks(b.function))


def test_bool_arithmetic_is_rejected_not_miscompiled() -> None:
    from offload.ir.types import BOOL

    b = Builder("badd", 0)
    t = b.const(True, BOOL)
    b.ret([b.binary(Opcode.ADD, t, t)])
    b.function.result_types = [BOOL]
    with pytest.raises(CompileError):
        emit_body(b.function, ArrayHooks(b.function))
