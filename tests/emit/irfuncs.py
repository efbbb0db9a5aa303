"""Small IR functions built with the Builder for the emitter's golden and PTX tests."""

from __future__ import annotations

import ast

from offload.diagnostics import Span
from offload.emit import BaseHooks
from offload.emit.template import expr, name
from offload.ir import Builder, Capture, Opcode
from offload.ir.core import Function
from offload.ir.types import F32, I64, ArrayType


def span(line: int) -> Span:
    return Span("kern.py", line, 4, line, 10)


def straight_line() -> Function:
    """f(i) = a[i] * 0.5 + float32(s) // 3  (one block)."""
    b = Builder("straight", 1, [Capture("a", ArrayType(F32, 1)), Capture("s", I64)])
    i, a, s = b.function.params
    b.span = span(2)
    x = b.op(Opcode.LOAD, [a, i], F32, hint="x")
    y = b.binary(Opcode.MUL, x, b.const(0.5, F32))
    b.span = span(3)
    q = b.binary(Opcode.FLOORDIV, s, b.const(3, I64))
    b.ret([b.binary(Opcode.ADD, y, b.cast(q, F32))])
    b.function.result_types = [F32]
    return b.function


def running_sum() -> Function:
    """f(i, j) = sum(a[i, k] for k in range(j)), with the loop's pair swapped every step
    (``x, y = y, x + a[i, k]``) so that block arguments need a parallel assignment."""
    b = Builder("running_sum", 2, [Capture("a", ArrayType(F32, 2))])
    i, j, a = b.function.params
    b.span = span(2)
    zero = b.const(0, I64)
    fzero = b.const(0.0, F32)
    head = b.new_block([I64, F32, F32], "loop")
    body = b.new_block([], "body")
    done = b.new_block([], "done")
    b.jump(head, [zero, fzero, fzero])
    b.position_at_end(head)
    k, x, y = head.args
    k.hint, x.hint, y.hint = "k", "x", "y"
    b.span = span(3)
    b.branch(b.binary(Opcode.LT, k, j), body, done)
    b.position_at_end(body)
    b.span = span(4)
    v = b.load(a, [i, k])
    y2 = b.binary(Opcode.ADD, x, v)
    k2 = b.binary(Opcode.ADD, k, b.const(1, I64))
    b.jump(head, [k2, y, y2])
    b.position_at_end(done)
    b.span = span(5)
    b.ret([b.binary(Opcode.ADD, x, y)])
    b.function.result_types = [F32]
    return b.function


class ArrayHooks(BaseHooks):
    """Hooks of the CPU shape: ``c0[i0, i1]``, results stored into ``out0[0]``."""

    def __init__(self, fn: Function) -> None:
        self.fn = fn

    def param_name(self, k: int) -> str:
        n = self.fn.n_index
        return f"i{k}" if k < n else f"c{k - n}"

    def load(self, capture_index: int, index_exprs: list[ast.expr]) -> ast.expr:
        index = ast.Tuple(index_exprs, ast.Load()) if len(index_exprs) > 1 else index_exprs[0]
        return ast.Subscript(name(f"c{capture_index}"), index, ast.Load())

    def shape(self, capture_index: int, axis: int) -> ast.expr:
        return expr(f"c{capture_index}.shape[{axis}]")

    def ret(self, values: list[ast.expr]) -> list[ast.stmt]:
        return [
            ast.Assign([ast.Subscript(name(f"out{k}"), ast.Constant(0), ast.Store())], v, lineno=0)
            for k, v in enumerate(values)
        ]


class PointerHooks(ArrayHooks):
    """Hooks of the GPU shape: raw pointers ``p<k>`` with element strides ``st<k>_<axis>``."""

    def load(self, capture_index: int, index_exprs: list[ast.expr]) -> ast.expr:
        offset: ast.expr = ast.Constant(0)
        for axis, e in enumerate(index_exprs):
            offset = expr(f"o + e * st{capture_index}x{axis}", o=offset, e=e)
        return ast.Subscript(name(f"p{capture_index}"), offset, ast.Load())

    def shape(self, capture_index: int, axis: int) -> ast.expr:
        return name(f"ext{capture_index}x{axis}")
