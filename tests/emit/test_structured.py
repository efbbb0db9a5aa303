"""Structured control flow: a reducible CFG becomes ``while``/``if``/``break``/``continue``
(no block-id dispatch loop), means what the interpreter says, and compiles under numba."""

# ruff: noqa: E501  (golden kernel text keeps its real line lengths)

from __future__ import annotations

import ast
import math
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.cpu import CPU_SEQ
from offload.emit import HEADER, emit_body, emit_source, print_source
from offload.emit.blocks import Names
from offload.emit.dispatch import dispatch_loop
from offload.emit.ops import OpContext
from offload.ir import Builder, Capture, Opcode
from offload.ir.core import Function
from offload.ir.interp import compute
from offload.ir.types import F32, I64, ArrayType
from offload.options import CompileOptions
from tests.emit.irfuncs import ArrayHooks, PointerHooks, running_sum, span
from tests.strategies.programs import programs, same_results

pytestmark = pytest.mark.cpu


def _break_continue() -> Function:
    """f(i, n) = sum of a[k % 5] for k < n, skipping negative elements (``continue``) and
    stopping at the first one above 100 (``break``)."""
    b = Builder("break_continue", 2, [Capture("a", ArrayType(F32, 1))])
    _, n, a = b.function.params
    b.span = span(2)
    head = b.new_block([I64, F32], "loop")
    body, check, add = b.new_block(hint="body"), b.new_block(hint="check"), b.new_block(hint="add")
    done = b.new_block([F32], "done")
    b.jump(head, [b.const(0, I64), b.const(0.0, F32)])
    b.position_at_end(head)
    k, s = head.args
    k.hint, s.hint = "k", "s"
    b.branch(b.binary(Opcode.LT, k, n), body, done, else_args=[s])
    b.position_at_end(body)
    b.span = span(3)
    x = b.load(a, [b.binary(Opcode.FLOORMOD, k, b.const(5, I64))])
    k1 = b.binary(Opcode.ADD, k, b.const(1, I64))
    b.branch(b.binary(Opcode.LT, x, b.const(0.0, F32)), head, check, then_args=[k1, s])
    b.position_at_end(check)
    b.span = span(4)
    b.branch(b.binary(Opcode.GT, x, b.const(100.0, F32)), done, add, then_args=[s])
    b.position_at_end(add)
    b.span = span(5)
    b.jump(head, [k1, b.binary(Opcode.ADD, s, x)])
    b.position_at_end(done)
    b.span = span(6)
    b.ret([done.args[0]])
    b.function.result_types = [F32]
    return b.function


def _nested_early_return() -> Function:
    """f(i, n): the first a + b with a*b == i over a, b < n, or -1 (the frontend's shape:
    an early ``return`` is a jump to the single exit block)."""
    b = Builder("find", 2)
    i, n = b.function.params
    b.span = span(2)
    zero, one = b.const(0, I64), b.const(1, I64)
    outer, inner = b.new_block([I64], "outer"), b.new_block([I64], "inner")
    body, found = b.new_block(hint="body"), b.new_block(hint="found")
    next_a, missing = b.new_block(hint="next_a"), b.new_block(hint="missing")
    exit_ = b.new_block([I64], "exit")
    b.jump(outer, [zero])
    b.position_at_end(outer)
    (ia,) = outer.args
    ia.hint = "a"
    b.branch(b.binary(Opcode.LT, ia, n), body, missing)
    b.position_at_end(body)
    b.span = span(3)
    b.jump(inner, [zero])
    b.position_at_end(inner)
    (ib,) = inner.args
    ib.hint = "b"
    b.branch(b.binary(Opcode.LT, ib, n), found, next_a)
    b.position_at_end(found)
    b.span = span(4)
    hit = b.binary(Opcode.EQ, b.binary(Opcode.MUL, ia, ib), i)
    b.branch(hit, exit_, inner, then_args=[b.binary(Opcode.ADD, ia, ib)],
             else_args=[b.binary(Opcode.ADD, ib, one)])  # fmt: skip
    b.position_at_end(next_a)
    b.span = span(3)
    b.jump(outer, [b.binary(Opcode.ADD, ia, one)])
    b.position_at_end(missing)
    b.span = span(5)
    b.jump(exit_, [b.const(-1, I64)])
    b.position_at_end(exit_)
    b.ret([exit_.args[0]])
    b.function.result_types = [I64]
    return b.function


def _if_elif_else() -> Function:
    """f(i) = 1.0 if i < 1 else 2.0 if i < 2 else 3.0, the conditions computed up front."""
    b = Builder("chain", 1)
    (i,) = b.function.params
    b.span = span(2)
    c1 = b.binary(Opcode.LT, i, b.const(1, I64))
    c2 = b.binary(Opcode.LT, i, b.const(2, I64))
    arms = [b.new_block(hint=h) for h in ("one", "elif", "two", "three")]
    join = b.new_block([F32], "join")
    b.branch(c1, arms[0], arms[1])
    b.position_at_end(arms[1])
    b.branch(c2, arms[2], arms[3])
    for arm, v in zip((arms[0], arms[2], arms[3]), (1.0, 2.0, 3.0), strict=True):
        b.position_at_end(arm)
        b.jump(join, [b.const(v, F32)])
    b.position_at_end(join)
    b.ret([join.args[0]])
    b.function.result_types = [F32]
    return b.function


def _irreducible() -> Function:
    """Two blocks that jump to each other, each also entered from the entry."""
    b = Builder("irreducible", 1)
    (i,) = b.function.params
    left, right = b.new_block([I64, I64], "left"), b.new_block([I64, I64], "right")
    done = b.new_block([I64], "done")
    start = (b.const(5, I64), i)
    b.branch(b.binary(Opcode.LT, i, b.const(2, I64)), left, right, list(start), list(start))
    for blk, other, k in ((left, right, 3), (right, left, 7)):
        b.position_at_end(blk)
        fuel, acc = blk.args
        acc2 = b.binary(Opcode.ADD, b.binary(Opcode.MUL, acc, b.const(2, I64)), b.const(k, I64))
        fuel2 = b.binary(Opcode.SUB, fuel, b.const(1, I64))
        b.branch(b.binary(Opcode.LE, fuel2, b.const(0, I64)), done, other, [acc2], [fuel2, acc2])
    b.position_at_end(done)
    b.ret([done.args[0]])
    b.function.result_types = [I64]
    return b.function


BREAK_CONTINUE = """\
k_5 = np.int64(0)
s_6 = np.float32(0.0)
v_10 = np.float32(0.0)
v_12 = np.int64(0)
v_18 = np.float32(0.0)
# offload: kern.py:2
v_3 = np.int64(0)
v_4 = np.float32(0.0)
k_5, s_6 = (v_3, v_4)
while True:
    # offload: kern.py:2
    v_7 = k_5 < i1
    if not v_7:
        v_18 = s_6
        break
    # offload: kern.py:3
    v_8 = np.int64(5)
    _t9k0 = np.uint64(0) - np.uint64(k_5 < np.int64(0))
    v_9 = np.int64(((np.uint64(k_5) ^ _t9k0) % np.uint64(5) ^ _t9k0) + (np.uint64(5) & _t9k0))
    v_10 = c0[v_9]
    v_11 = np.int64(1)
    v_12 = np.int64(np.uint64(k_5) + np.uint64(v_11))
    v_13 = np.float32(0.0)
    v_14 = v_10 < v_13
    if v_14:
        k_5, s_6 = (v_12, s_6)
        continue
    # offload: kern.py:4
    v_15 = np.float32(100.0)
    v_16 = v_10 > v_15
    if v_16:
        v_18 = s_6
        break
    # offload: kern.py:5
    v_17 = s_6 + v_10
    k_5, s_6 = (v_12, v_17)
# offload: kern.py:6
out0[0] = v_18
"""

NESTED_EARLY_RETURN = """\
a_4 = np.int64(0)
b_6 = np.int64(0)
v_2 = np.int64(0)
v_3 = np.int64(0)
v_14 = np.int64(0)
_exit = 0
# offload: kern.py:2
v_2 = np.int64(0)
v_3 = np.int64(1)
a_4 = v_2
while True:
    # offload: kern.py:2
    v_5 = a_4 < i1
    if not v_5:
        break
    # offload: kern.py:3
    b_6 = v_2
    while True:
        # offload: kern.py:3
        v_7 = b_6 < i1
        if not v_7:
            break
        # offload: kern.py:4
        v_8 = np.int64(np.uint64(a_4) * np.uint64(b_6))
        v_9 = v_8 == i0
        v_10 = np.int64(np.uint64(a_4) + np.uint64(b_6))
        v_11 = np.int64(np.uint64(b_6) + np.uint64(v_3))
        if v_9:
            v_14 = v_10
            _exit = 1
            break
        b_6 = v_11
    if _exit == 1:
        break
    # offload: kern.py:3
    v_12 = np.int64(np.uint64(a_4) + np.uint64(v_3))
    a_4 = v_12
if _exit == 0:
    # offload: kern.py:5
    v_13 = np.int64(-1)
    v_14 = v_13
_exit = 0
# offload: kern.py:5
out0[0] = v_14
"""

IF_ELIF_ELSE = """\
v_4 = False
v_8 = np.float32(0.0)
# offload: kern.py:2
v_1 = np.int64(1)
v_2 = i0 < v_1
v_3 = np.int64(2)
v_4 = i0 < v_3
if v_2:
    v_5 = np.float32(1.0)
    v_8 = v_5
elif v_4:
    v_6 = np.float32(2.0)
    v_8 = v_6
else:
    v_7 = np.float32(3.0)
    v_8 = v_7
# offload: kern.py:2
out0[0] = v_8
"""


@pytest.mark.parametrize(
    ("build", "golden"),
    [
        (_break_continue, BREAK_CONTINUE),
        (_nested_early_return, NESTED_EARLY_RETURN),
        (_if_elif_else, IF_ELIF_ELSE),
    ],
    ids=["break_continue", "nested_early_return", "if_elif_else"],
)
def test_reducible_cfg_becomes_while_if_break_continue_without_block_dispatch(
    build: Any, golden: str
) -> None:
    fn = build()
    text = print_source(emit_body(fn, ArrayHooks(fn)))
    assert text == golden
    assert "_blk" not in text


def test_irreducible_cfg_falls_back_to_the_dispatch_loop_and_keeps_its_meaning() -> None:
    fn = _irreducible()
    assert "_blk = 0\nwhile True:" in print_source(emit_body(fn, ArrayHooks(fn)))
    assert np.array_equal(_python_array(fn, (4,), []), compute(fn, (4,), [])[0])


# -- running the emitted body ---------------------------------------------------------


def _python_kernel(fn: Function) -> Any:
    """The emitted body as a plain Python function ``kernel(i.., c.., out..)``."""
    params = [f"i{k}" for k in range(fn.n_index)] + [f"c{k}" for k in range(len(fn.captures))]
    params += [f"out{k}" for k in range(len(fn.result_types))]

    def wrap(body: list[ast.stmt]) -> list[ast.stmt]:
        args = ast.arguments([], [ast.arg(p) for p in params], None, [], [], None, [])
        return [ast.FunctionDef(name="kernel", args=args, body=body, decorator_list=[], lineno=0)]

    namespace: dict[str, Any] = {}
    exec(compile(emit_source(fn, ArrayHooks(fn), wrap), "<structured>", "exec"), namespace)
    return namespace["kernel"]


def _python_array(fn: Function, shape: tuple[int, ...], caps: list[Any]) -> np.ndarray[Any, Any]:
    """The first result at every index of ``shape``, computed by the emitted Python."""
    kernel = _python_kernel(fn)
    out = np.empty(shape, dtype=fn.result_types[0].dtype)
    for index in np.ndindex(*shape):
        cell = [np.empty(1, dtype=t.dtype) for t in fn.result_types]
        with np.errstate(all="ignore"):
            kernel(*(np.int64(k) for k in index), *caps, *cell)
        out[index] = cell[0][0]
    return out


def _cpu_seq(fn: Function, shape: tuple[int, ...], caps: list[Any]) -> tuple[Any, ...]:
    kernel = CPU_SEQ.compile(fn, CompileOptions())
    outs = CPU_SEQ.allocate(shape, [t.dtype for t in fn.result_types])
    kernel.launch(shape, outs, caps)
    return tuple(outs)


@pytest.mark.parametrize(
    ("build", "shape", "caps"),
    [
        (_break_continue, (2, 9), [np.array([3.0, -1.0, 2.0, 200.0, 5.0], np.float32)]),
        (_nested_early_return, (13, 5), []),
        (_if_elif_else, (4,), []),
        (_irreducible, (4,), []),
    ],
    ids=["break_continue", "nested_early_return", "if_elif_else", "irreducible"],
)
def test_structured_kernels_compile_under_numba_and_match_the_interpreter(
    build: Any, shape: tuple[int, ...], caps: list[Any]
) -> None:
    fn = build()
    want = compute(fn, shape, caps)
    assert same_results(_cpu_seq(fn, shape, caps), want)
    assert same_results((_python_array(fn, shape, caps),), want[:1])


@settings(max_examples=40, deadline=None)
@given(program=programs())
def test_random_programs_through_cpu_seq_match_the_interpreter(
    program: tuple[Function, tuple[int, ...], list[object]],
) -> None:
    fn, shape, caps = program
    assert same_results(_cpu_seq(fn, shape, caps), compute(fn, shape, caps))


# -- random control-flow graphs (irreducible ones included) ---------------------------


@st.composite
def control_flow_graphs(draw: Any) -> Function:
    """A random CFG over 2-7 blocks, any block jumping or branching to any other (so loops,
    nested loops, multi-exit loops and irreducible cycles all occur); each block spends
    one unit of fuel, so every run ends, by ``return`` in place or via a shared exit."""
    n = draw(st.integers(2, 7))
    b = Builder("cfg", 1)
    (i,) = b.function.params
    blocks = [b.new_block([I64, I64], f"b{k}") for k in range(n)]
    exit_ = b.new_block([I64], "exit")
    b.jump(blocks[0], [b.const(draw(st.integers(1, 12)), I64), i])
    for k, blk in enumerate(blocks):
        b.position_at_end(blk)
        fuel, acc = blk.args
        mixed = b.binary(Opcode.ADD, b.binary(Opcode.MUL, acc, b.const(3, I64)), b.const(k, I64))
        acc2 = b.binary(Opcode.FLOORMOD, mixed, b.const(1009, I64))
        fuel2 = b.binary(Opcode.SUB, fuel, b.const(1, I64))
        stop, go = b.new_block(hint="stop"), b.new_block(hint="go")
        b.branch(b.binary(Opcode.LE, fuel2, b.const(0, I64)), stop, go)
        b.position_at_end(stop)
        if draw(st.booleans()):
            b.ret([acc2])
        else:
            b.jump(exit_, [acc2])
        b.position_at_end(go)
        kind = draw(st.integers(0, 4))
        targets = st.sampled_from(blocks)
        if kind == 0:
            b.jump(exit_, [b.binary(Opcode.ADD, acc2, b.const(1, I64))])
        elif kind == 1:
            b.jump(draw(targets), [fuel2, acc2])
        else:
            parity = b.binary(Opcode.AND, acc2, b.const(draw(st.sampled_from([1, 2, 4])), I64))
            odd = b.binary(Opcode.NE, parity, b.const(0, I64))
            b.branch(odd, draw(targets), draw(targets), [fuel2, acc2], [fuel2, acc2])
    b.position_at_end(exit_)
    b.ret([exit_.args[0]])
    b.function.result_types = [I64]
    return b.function


@settings(max_examples=150, deadline=None)
@given(fn=control_flow_graphs())
def test_random_control_flow_graphs_emit_python_that_matches_the_interpreter(fn: Function) -> None:
    want = compute(fn, (6,), [])[0]
    assert np.array_equal(_python_array(fn, (6,), []), want)


@settings(max_examples=8, deadline=None)
@given(fn=control_flow_graphs())
def test_random_control_flow_graphs_compile_under_numba(fn: Function) -> None:
    assert same_results(_cpu_seq(fn, (6,), []), compute(fn, (6,), []))


# -- what NVVM sees -------------------------------------------------------------------


def _ptx(fn: Function, body: list[ast.stmt]) -> str:
    cuda = pytest.importorskip("numba.cuda")
    from numba import types

    params = ["out0", "p0", "st0x0", "st0x1", "ext0x0", "ext0x1", "i0", "i1"]
    args = ast.arguments([], [ast.arg(p) for p in params], None, [], [], None, [])
    fdef = ast.FunctionDef(name="kernel", args=args, body=body, decorator_list=[], lineno=0)
    namespace: dict[str, Any] = {"np": np, "math": math}
    exec(compile(HEADER + print_source([fdef]), "<ptx-structured>", "exec"), namespace)
    f32p = types.CPointer(types.float32)
    ptx, _ = cuda.compile_ptx(namespace["kernel"], (f32p, f32p, *([types.int64] * 6)), cc=(8, 0))
    return str(ptx)


def _most_constants_one_register_is_tested_against(ptx: str) -> int:
    """A dispatch loop's ``_blk == 1``, ``_blk == 2``... survive as ``setp`` compares of
    one register with several immediates; a counted loop compares a register with one."""
    seen: dict[str, set[str]] = {}
    for reg, imm in re.findall(r"setp\.\w+\.s64\s+%p\d+, (%rd\d+), (-?\d+);", ptx):
        seen.setdefault(reg, set()).add(imm)
    return max((len(v) for v in seen.values()), default=0)


@pytest.mark.ptx
def test_structured_loop_has_no_block_id_compare_chain_in_ptx() -> None:
    fn = running_sum()
    hooks = PointerHooks(fn)
    structured = _ptx(fn, emit_body(fn, hooks))
    names = Names(fn, hooks, entry_is_target=False)
    cx = OpContext(names.ref, names.var, names.capture_of, hooks)
    zeros = emit_body(fn, hooks)[:3]  # the typed zeros of k, x, y
    dispatched = _ptx(fn, [*zeros, *dispatch_loop(fn, cx, names)])
    assert _most_constants_one_register_is_tested_against(dispatched) >= 3
    assert _most_constants_one_register_is_tested_against(structured) <= 1
