"""A Hypothesis strategy of random well-typed IR programs, for semantic tests of passes
and backends: ``programs()`` draws ``(Function, shape, captures)``.

Programs mix i64/i32/f64/f32 arithmetic, ``//`` and ``%`` by constants and by variables,
casts, in-bounds array loads (indices reduced with ``%`` by the extent, and Python-style
negative indices wrapped with ``select(i < 0, i + n, i)``), diamonds and triangles
(including a load guarded by its branch, ``if i > 0: a[i - 1]``), a load guarded by an
``or``/``and`` of two bounds tests (as the frontend lowers them: short-circuit blocks
joining on a bool block argument, or a select of the two evaluated bools), and counted
loops. Every program runs to completion under the interpreter without an out-of-bounds
read.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from offload.ir.builder import Builder
from offload.ir.core import Block, Capture, Function, Jump, Value
from offload.ir.ops import Opcode
from offload.ir.types import BOOL, F32, F64, I32, I64, ArrayType, ScalarType

ARRAY_LEN = 5
INT_OPS = [
    Opcode.ADD,
    Opcode.SUB,
    Opcode.MUL,
    Opcode.FLOORDIV,
    Opcode.FLOORMOD,
    Opcode.MIN,
    Opcode.MAX,
    Opcode.AND,
    Opcode.XOR,
]
FLOAT_OPS = [Opcode.ADD, Opcode.SUB, Opcode.MUL, Opcode.TRUEDIV, Opcode.MIN, Opcode.MAX]
COMPARES = [Opcode.LT, Opcode.LE, Opcode.GT, Opcode.GE, Opcode.EQ, Opcode.NE]
TYPES = [I64, I32, F64, F32]


class _Gen:
    def __init__(self, draw: Any, b: Builder, arrays: dict[ScalarType, Value]) -> None:
        self.draw = draw
        self.b = b
        self.arrays = arrays
        self.pool: dict[ScalarType, list[Value]] = {t: [] for t in TYPES}

    def pick(self, t: ScalarType) -> Value:
        vals = self.pool[t]
        if not vals or self.draw(st.integers(0, 4)) == 0:
            return self.const(t)
        return vals[self.draw(st.integers(0, len(vals) - 1))]

    def const(self, t: ScalarType) -> Value:
        if t.is_int:
            return self.b.const(self.draw(st.integers(-7, 7)), t)
        v = self.draw(
            st.sampled_from([0.0, -0.0, 0.5, 1.0, -2.0, 3.25, float("nan"), float("inf")])
        )
        return self.b.const(v, t)

    def add(self, v: Value) -> Value:
        assert isinstance(v.type, ScalarType)
        self.pool[v.type].append(v)
        return v

    def index(self) -> Value:
        """An i64 in ``[0, ARRAY_LEN)``: some i64 reduced by ``%`` (floor: never negative)."""
        n = self.b.const(ARRAY_LEN, I64)
        return self.b.binary(Opcode.FLOORMOD, self.pick(I64), n)

    def load(self, t: ScalarType) -> Value:
        arr = self.arrays[t]
        if self.draw(st.booleans()):
            return self.b.load(arr, [self.index()])
        # Python's negative index: j in [-n, n), wrapped explicitly as the frontend does.
        n = self.b.shape(arr, 0)
        j = self.b.binary(
            Opcode.SUB, self.index(), self.b.const(self.draw(st.integers(0, ARRAY_LEN)), I64)
        )
        neg = self.b.binary(Opcode.LT, j, self.b.const(0, I64))
        return self.b.load(arr, [self.b.select(neg, self.b.binary(Opcode.ADD, j, n), j)])

    def expr(self) -> Value:
        kind = self.draw(st.integers(0, 5))
        t = self.draw(st.sampled_from(TYPES))
        if kind == 0 and t in self.arrays:
            return self.add(self.load(t))
        if kind == 1:
            src = self.draw(st.sampled_from([s for s in TYPES if s.is_int or t.is_float]))
            return self.add(self.b.cast(self.pick(src), t) if src != t else self.pick(t))
        if kind == 2:
            return self.add(self.b.unary(Opcode.NEG, self.pick(t)))
        ops = INT_OPS if t.is_int else FLOAT_OPS
        return self.add(self.b.binary(self.draw(st.sampled_from(ops)), self.pick(t), self.pick(t)))

    def cond(self) -> Value:
        t = self.draw(st.sampled_from(TYPES))
        return self.b.binary(self.draw(st.sampled_from(COMPARES)), self.pick(t), self.pick(t))

    def straight(self, n: int) -> None:
        for _ in range(n):
            self.expr()

    def diamond(self, triangle: bool) -> None:
        t = self.draw(st.sampled_from(TYPES))
        c = self.cond()
        then_b, join = self.b.new_block(hint="then"), self.b.new_block([t], hint="join")
        else_b = join if triangle else self.b.new_block(hint="else")
        saved = {k: list(v) for k, v in self.pool.items()}
        default = self.pick(t)
        self.b.branch(c, then_b, else_b, else_args=[default] if triangle else [])
        mirror = not triangle and self.draw(st.booleans())
        for arm in [then_b] if triangle else [then_b, else_b]:
            self.b.position_at_end(arm)
            if mirror and arm is else_b:
                exit_value = self._mirror(then_b, t)
            else:
                self.straight(self.draw(st.integers(0, 3)))
                exit_value = self.pick(t)
            self.b.jump(join, [exit_value])
            self.pool = {k: list(v) for k, v in saved.items()}
        self.b.position_at_end(join)
        self.add(join.args[0])

    def _mirror(self, then_b: Block, t: ScalarType) -> Value:
        """The then-arm's ops again, alpha-renamed, some operands swapped for others: the
        alpha-equivalent arms the branch merge pairs up."""
        env: dict[Value, Value] = {}
        for op in then_b.ops:
            operands = [env.get(v, v) for v in op.operands]
            # Only float arithmetic is perturbed: integer ops may compute a load's index.
            rt = op.result.type
            float_arith = (
                op.opcode is not Opcode.LOAD and isinstance(rt, ScalarType) and rt.is_float
            )
            if operands and float_arith and self.draw(st.integers(0, 2)) == 0:
                k = self.draw(st.integers(0, len(operands) - 1))
                vt = operands[k].type
                if isinstance(vt, ScalarType) and vt in self.pool:
                    operands[k] = self.pick(vt)
            env[op.result] = self.b.op(op.opcode, operands, op.result.type, op.attrs)
        jump = then_b.terminator
        assert isinstance(jump, Jump)
        return env.get(jump.args[0], jump.args[0])

    def guarded_load(self) -> None:
        # if i > 0: x = a[i - 1] else: x = 0.0  -- the load must not be speculated.
        arr = self.arrays[F64]
        i = self.b.binary(Opcode.FLOORMOD, self.pick(I64), self.b.shape(arr, 0))
        c = self.b.binary(Opcode.GT, i, self.b.const(0, I64))
        then_b, join = self.b.new_block(hint="then"), self.b.new_block([F64], hint="join")
        self.b.branch(c, then_b, join, else_args=[self.b.const(0.0, F64)])
        self.b.position_at_end(then_b)
        x = self.b.load(arr, [self.b.binary(Opcode.SUB, i, self.b.const(1, I64))])
        self.b.jump(join, [x])
        self.b.position_at_end(join)
        self.add(join.args[0])

    def bounds_tested_load(self) -> None:
        # x = 0.0 if i < 0 or i >= n else a[i]   (or: a[i] if i >= 0 and i < n else 0.0)
        # The load is safe only through both tests: a pass that narrows a range through
        # the ``or``/``and`` wrongly makes it read out of bounds.
        arr = self.arrays[F64]
        n = self.b.shape(arr, 0)
        i = self.b.binary(Opcode.SUB, self.pick(I64), self.b.const(2, I64))
        either = self.draw(st.booleans())  # ``or`` of the out-of-bounds tests, else ``and``
        first = self.b.binary(Opcode.LT if either else Opcode.GE, i, self.b.const(0, I64))
        if self.draw(st.booleans()):  # short-circuit: a bool block argument
            rhs, join = self.b.new_block(hint="rhs"), self.b.new_block([BOOL], hint="test")
            short = [self.b.const(either, BOOL)]
            if either:
                self.b.branch(first, join, rhs, then_args=short)
            else:
                self.b.branch(first, rhs, join, else_args=short)
            self.b.position_at_end(rhs)
            second = self.b.binary(Opcode.GE if either else Opcode.LT, i, n)
            self.b.jump(join, [second])
            self.b.position_at_end(join)
            test = join.args[0]
        else:  # both evaluated, then select(c, c, d) for ``or``, select(c, d, c) for ``and``
            second = self.b.binary(Opcode.GE if either else Opcode.LT, i, n)
            test = (
                self.b.select(first, first, second)
                if either
                else self.b.select(first, second, first)
            )
        inside, outside = self.b.new_block(hint="inside"), self.b.new_block(hint="outside")
        done = self.b.new_block([F64], hint="done")
        self.b.branch(test, outside if either else inside, inside if either else outside)
        self.b.position_at_end(inside)
        self.b.jump(done, [self.b.load(arr, [i])])
        self.b.position_at_end(outside)
        self.b.jump(done, [self.b.const(0.0, F64)])
        self.b.position_at_end(done)
        self.add(done.args[0])

    def loop(self) -> None:
        t = self.draw(st.sampled_from(TYPES))
        trips = self.b.const(self.draw(st.integers(0, 3)), I64)
        init = self.pick(t)
        header = self.b.new_block([I64, t], hint="loop")
        body, done = self.b.new_block(hint="body"), self.b.new_block(hint="done")
        self.b.jump(header, [self.b.const(0, I64), init])
        self.b.position_at_end(header)
        k, acc = header.args
        self.b.branch(self.b.binary(Opcode.LT, k, trips), body, done)
        saved = {key: list(v) for key, v in self.pool.items()}
        self.b.position_at_end(body)
        self.add(k)
        self.add(acc)
        self.straight(self.draw(st.integers(0, 3)))
        step = self.b.binary(
            self.draw(st.sampled_from([Opcode.ADD, Opcode.MUL])), acc, self.pick(t)
        )
        self.b.jump(header, [self.b.binary(Opcode.ADD, k, self.b.const(1, I64)), step])
        self.pool = saved
        self.b.position_at_end(done)
        self.add(acc)


@st.composite
def programs(draw: Any) -> tuple[Function, tuple[int, ...], list[object]]:
    """A random well-typed program, a small shape for it, and capture values."""
    rank = draw(st.integers(1, 2))
    shape = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    b = Builder("random", rank)
    arrays = {
        t: b.add_capture(Capture(f"a_{t}", ArrayType(t, 1)), f"a_{t}") for t in (F64, F32, I64)
    }
    g = _Gen(draw, b, arrays)
    for p in b.function.index_params:
        g.add(p)
    for _ in range(draw(st.integers(1, 5))):
        choice = draw(st.integers(0, 6))
        if choice <= 1:
            g.straight(draw(st.integers(1, 3)))
        elif choice == 2:
            g.diamond(triangle=False)
        elif choice == 3:
            g.diamond(triangle=True)
        elif choice == 4:
            g.guarded_load()
        elif choice == 5:
            g.bounds_tested_load()
        else:
            g.loop()
    results = [g.pick(draw(st.sampled_from(TYPES))) for _ in range(draw(st.integers(1, 2)))]
    b.function.result_types = [r.type for r in results if isinstance(r.type, ScalarType)]
    b.ret(results)
    floats = st.floats(allow_nan=True, allow_infinity=True, width=32)
    captures: list[object] = [
        np.array(draw(st.lists(floats, min_size=ARRAY_LEN, max_size=ARRAY_LEN)), dtype=np.float64),
        np.array(draw(st.lists(floats, min_size=ARRAY_LEN, max_size=ARRAY_LEN)), dtype=np.float32),
        np.array(
            draw(
                st.lists(st.integers(-(2**63), 2**63 - 1), min_size=ARRAY_LEN, max_size=ARRAY_LEN)
            ),
            dtype=np.int64,
        ),
    ]
    return b.function, shape, captures


def same_results(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether two tuples of result arrays agree exactly (NaN equals NaN; -0.0 is not 0.0)."""
    for x, y in zip(a, b, strict=True):
        if x.dtype != y.dtype or x.shape != y.shape:
            return False
        if x.dtype.kind == "f":
            nan = np.isnan(x)
            if not np.array_equal(nan, np.isnan(y)):
                return False
            if not np.array_equal(x[~nan], y[~nan]):
                return False
            if not np.array_equal(np.signbit(x[~nan]), np.signbit(y[~nan])):
                return False
        elif not np.array_equal(x, y):
            return False
    return True


__all__ = ["BOOL", "programs", "same_results"]
