"""Hand-built IR for the GPU backend's tests (independent of the frontend)."""

from __future__ import annotations

from offload.ir.builder import Builder
from offload.ir.core import Capture, Function
from offload.ir.ops import Opcode
from offload.ir.types import BOOL, F32, F64, I64, ArrayType


def square_or_negate_f32() -> Function:
    """``f(i, j) = x*x if x > 0.5 else -x`` with ``x = a[i, j]``, ``a: f32[:, :]``."""
    b = Builder("square_or_negate", 2, index_hints=["i", "j"])
    a = b.add_capture(Capture("a", ArrayType(F32, 2)), "a")
    i, j = b.function.index_params
    x = b.load(a, [i, j])
    x.hint = "x"
    cond = b.binary(Opcode.GT, x, b.const(0.5, F32))
    sq = b.binary(Opcode.MUL, x, x)
    neg = b.unary(Opcode.NEG, x)
    b.ret([b.select(cond, sq, neg)])
    b.function.result_types = [F32]
    return b.function


def saxpy_f32() -> Function:
    """``f(i) = alpha * x[i] + y[i]`` with a captured scalar ``alpha: f32``."""
    b = Builder("saxpy", 1, index_hints=["i"])
    x = b.add_capture(Capture("x", ArrayType(F32, 1)), "x")
    y = b.add_capture(Capture("y", ArrayType(F32, 1)), "y")
    alpha = b.add_capture(Capture("alpha", F32), "alpha")
    (i,) = b.function.index_params
    ax = b.binary(Opcode.MUL, alpha, b.load(x, [i]))
    b.ret([b.binary(Opcode.ADD, ax, b.load(y, [i]))])
    b.function.result_types = [F32]
    return b.function


def ratio_f32() -> Function:
    """``f(i) = x[i] / y[i]`` (a true division: ``div.rn.f32`` in PTX)."""
    b = Builder("ratio", 1, index_hints=["i"])
    x = b.add_capture(Capture("x", ArrayType(F32, 1)), "x")
    y = b.add_capture(Capture("y", ArrayType(F32, 1)), "y")
    (i,) = b.function.index_params
    b.ret([b.binary(Opcode.TRUEDIV, b.load(x, [i]), b.load(y, [i]))])
    b.function.result_types = [F32]
    return b.function


def index_arith_3d() -> Function:
    """``f(i, j, k) = (i * 100 + j * 10 + k, float(k) / 2, j > k)``: rank 3, three results,
    no captures."""
    b = Builder("index_arith", 3, index_hints=["i", "j", "k"])
    i, j, k = b.function.index_params
    t = b.binary(
        Opcode.ADD,
        b.binary(Opcode.MUL, i, b.const(100, I64)),
        b.binary(Opcode.MUL, j, b.const(10, I64)),
    )
    s = b.binary(Opcode.ADD, t, k)
    half = b.binary(Opcode.TRUEDIV, b.cast(k, F64), b.const(2.0, F64))
    gt = b.binary(Opcode.GT, j, k)
    b.ret([s, half, gt])
    b.function.result_types = [I64, F64, BOOL]
    return b.function


def loop_sum_row() -> Function:
    """``f(i) = sum(a[i, k] for k in range(a.shape[1]))``: a CFG with a loop, f64."""
    b = Builder("row_sum", 1, index_hints=["i"])
    a = b.add_capture(Capture("a", ArrayType(F64, 2)), "a")
    (i,) = b.function.index_params
    n = b.shape(a, 1)
    head = b.new_block([I64, F64], "loop")
    body = b.new_block([], "body")
    done = b.new_block([], "done")
    b.jump(head, [b.const(0, I64), b.const(0.0, F64)])
    b.position_at_end(head)
    k, acc = head.args
    b.branch(b.binary(Opcode.LT, k, n), body, done)
    b.position_at_end(body)
    acc2 = b.binary(Opcode.ADD, acc, b.load(a, [i, k]))
    b.jump(head, [b.binary(Opcode.ADD, k, b.const(1, I64)), acc2])
    b.position_at_end(done)
    b.ret([acc])
    b.function.result_types = [F64]
    return b.function


ALL = {
    "square_or_negate": square_or_negate_f32,
    "saxpy": saxpy_f32,
    "ratio": ratio_f32,
    "index_arith": index_arith_3d,
    "row_sum": loop_sum_row,
}
