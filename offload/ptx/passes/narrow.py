"""32-bit index arithmetic where range facts allow it (pass ``narrow``; the GPU backend's).

Python ints are ``i64`` in this IR. On the GPU a 64-bit add is two instructions, a 64-bit
multiply three or four, a 64-bit division a ~40-instruction routine, and every loop
counter and clamp of a stencil is such arithmetic: the index work, not the memory traffic,
bounded the stencil kernels (H100 run 2). Under an *assumption* about the launch --
every index extent and every captured integer scalar lies in ``[-limit, limit)`` -- range
facts bound most index arithmetic far inside ``int32``. This pass then gives each ``i64``
value whose range fits in ``i32`` the type ``i32``:

* an op is narrowed only when its result and all its integer operands fit in ``i32`` at
  that point, so the 32-bit op computes the same mathematical value as the 64-bit one
  (nothing that did not wrap before wraps now);
* block arguments are narrowed when their range (the join of every incoming value) fits;
* a comparison of two ``i64`` values that both fit compares them as ``i32``;
* loads take ``i32`` indices (the verifier allows them for this pass): narrowed values as
  they are, other indices truncated -- those that fit, or any when out-of-bounds reads are
  undefined (``trust_load_indices``: every in-bounds index fits);
* a narrowed ``add``/``sub``/``mul`` is marked ``{nsw = true}`` (it cannot overflow ``i32``);
* where a narrowed value meets a 64-bit use (a return, an op that was not narrowed) a
  sign-extending ``cast`` to ``i64`` is inserted, and where a 64-bit value that
  fits meets a narrowed op a truncating ``cast`` to ``i32``; NVVM folds both away.

The result is correct only where the assumption holds, so the pass is not in the registry
(no pipeline text can name it): the GPU backend runs it last on a kernel's optimised IR
for its 32-bit variant, whose launch checks the assumption and otherwise runs the 64-bit
kernel (``offload.ptx.guard``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from offload.analysis.ranges import Range, RangeFacts
from offload.ir.core import Block, Branch, Function, Jump, Op, Return, Value
from offload.ir.ops import COMPARE, Opcode
from offload.ir.types import I32, I64, ScalarType
from offload.opt.base import FunctionPass
from offload.options import CompileOptions

NARROW_LIMIT = 2**30
"""The assumed bound: extents in ``[0, NARROW_LIMIT)``, captured integer scalars in
``[-NARROW_LIMIT, NARROW_LIMIT)`` -- far enough inside ``int32`` that ``i + k`` and
``n - 1`` style index arithmetic still fits."""

_I32 = Range(-(2**31), 2**31 - 1)

_NARROWABLE = frozenset(
    {
        Opcode.CONST,
        Opcode.ADD,
        Opcode.SUB,
        Opcode.MUL,
        Opcode.FLOORDIV,
        Opcode.FLOORMOD,
        Opcode.DIV,
        Opcode.REM,
        Opcode.MIN,
        Opcode.MAX,
        Opcode.NEG,
        Opcode.ABS,
        Opcode.AND,
        Opcode.OR,
        Opcode.XOR,
        Opcode.INVERT,
        Opcode.SHL,
        Opcode.SHR,
        Opcode.SELECT,
        Opcode.CAST,
    }
)
"""Ops whose value on mathematical integers does not depend on the width once operands
and result fit (``POW`` is left out: the emitter's loop for it is not worth narrowing)."""


NSW = "nsw"
"""The attribute (``{nsw = true}``) on an ``ADD``/``SUB``/``MUL`` this pass narrowed: its
result and operands fit in ``i32``, so the 32-bit op cannot overflow (under the launch
guard). The GPU emitter tells NVVM (``add nsw i32``), which may then widen a loop counter
or offset and strength-reduce addresses into pointer increments; others ignore it."""

_NO_WRAP = frozenset({Opcode.ADD, Opcode.SUB, Opcode.MUL})


def _fits(r: Range | None) -> bool:
    return r is not None and _I32.lo <= r.lo and r.hi <= _I32.hi


def _int_operands(op: Op) -> list[Value]:
    """The integer operands whose width follows the result's (a select's arms, ...)."""
    if op.opcode is Opcode.SELECT:
        return op.operands[1:]
    return [v for v in op.operands if isinstance(v.type, ScalarType) and v.type.is_int]


@dataclass(frozen=True)
class NarrowIndexArithmetic(FunctionPass):
    """Give ``i64`` values that provably fit in ``i32`` the type ``i32`` (see the module
    docstring for the assumption this relies on)."""

    limit: int = NARROW_LIMIT
    trust_load_indices: bool = True
    """Out-of-bounds reads are undefined (no ``bounds_check``): a load index that facts
    cannot bound may still be truncated to i32, since every in-bounds one fits."""
    name = "narrow"

    @classmethod
    def from_options(cls, options: CompileOptions) -> NarrowIndexArithmetic:
        return cls(trust_load_indices=not options.bounds_check)

    def rewrite(self, fn: Function) -> Function:
        facts = RangeFacts(fn, index_limit=self.limit, scalar_limit=self.limit)
        narrow, compares = self._choose(fn, facts)
        for v in narrow:
            v.type = I32
        for op in fn.ops():
            # Only ops narrowed here: an i32 op of the user's (np.int32 arithmetic) wraps.
            if op.opcode in _NO_WRAP and op.result in narrow:
                op.attrs[NSW] = True

        def index32(v: Value, block: Block) -> bool:
            # An i64 load index becomes i32, so that the offset is formed in 32 bits.
            return self.trust_load_indices or _fits(facts.range_of(v, block))

        for block in fn.blocks:
            _Rewriter(fn, block, narrow, compares, index32).run()
        return fn

    @staticmethod
    def _choose(fn: Function, facts: RangeFacts) -> tuple[set[Value], set[Op]]:
        """The values to narrow (every ``i64`` that fits) and the comparisons to make in 32
        bits. (Keeping loop counters 64-bit for NVVM's strength reduction was measured and
        dropped: nbody and 1d-convolution gained 5-7%, dotp, smvm, mandelbrot and
        volume-rendering lost 10-20%, H100 2026-11-21.)"""
        narrow: set[Value] = set()
        for block in fn.blocks[1:]:
            narrow.update(a for a in block.args if a.type == I64 and _fits(facts.range_of(a)))
        for block in fn.blocks:
            for op in block.ops:
                if (
                    op.result.type == I64
                    and op.opcode in _NARROWABLE
                    and all(_fits(facts.range_of(v, block)) for v in _int_operands(op))
                    and _fits(facts.range_of(op.result))
                ):
                    narrow.add(op.result)
        compares = {
            op
            for block in fn.blocks
            for op in block.ops
            if op.opcode in COMPARE
            and all(v.type == I64 for v in op.operands)
            and any(v in narrow for v in op.operands)
            and all(_fits(facts.range_of(v, block)) for v in op.operands)
        }
        return narrow, compares


class _Rewriter:
    """Inserts the casts one block needs where narrowed and 64-bit values meet."""

    def __init__(
        self,
        fn: Function,
        block: Block,
        narrow: set[Value],
        compares: set[Op],
        index32: Callable[[Value, Block], bool],
    ):
        self.fn = fn
        self.block = block
        self.narrow = narrow
        self.compares = compares
        self.index32 = index32
        self.ops: list[Op] = []
        self.casts: dict[tuple[Value, ScalarType], Value] = {}
        """(value, type) -> its cast made earlier in this block (dominates later uses)."""

    def run(self) -> None:
        for op in self.block.ops:
            wanted = self._wanted(op)
            op.operands = [
                self._as(v, want) if want is not None else v
                for v, want in zip(op.operands, wanted, strict=True)
            ]
            self.ops.append(op)
        t = self.block.terminator
        if isinstance(t, Jump):
            t.args = self._edge(t.args, t.target)
        elif isinstance(t, Branch):
            t.then_args = self._edge(t.then_args, t.then_target)
            t.else_args = self._edge(t.else_args, t.else_target)
        elif isinstance(t, Return):
            t.values = [
                self._as(v, rt) for v, rt in zip(t.values, self.fn.result_types, strict=True)
            ]
        self.block.ops = self.ops

    def _wanted(self, op: Op) -> list[ScalarType | None]:
        """The type each operand must have (``None``: any)."""
        if op.result in self.narrow or op in self.compares:
            int_ops = {id(v) for v in _int_operands(op)}
            if op.opcode is Opcode.CAST:
                return [None]
            return [I32 if id(v) in int_ops else None for v in op.operands]
        if op.opcode is Opcode.LOAD:
            # Loads take i32 indices (the kernel then forms the offset in 32 bits).
            return [None] + [
                I32 if v.type == I64 and self.index32(v, self.block) else None
                for v in op.operands[1:]
            ]
        if op.opcode is Opcode.CAST:
            return [None]  # a cast from i32 gives what the cast from i64 of that value did
        return [I64 if v in self.narrow else None for v in op.operands]

    def _edge(self, args: list[Value], target: Block) -> list[Value]:
        out: list[Value] = []
        for v, param in zip(args, target.args, strict=True):
            assert isinstance(param.type, ScalarType) or v.type == param.type
            out.append(self._as(v, param.type) if isinstance(param.type, ScalarType) else v)
        return out

    def _as(self, v: Value, want: ScalarType) -> Value:
        if v.type == want or not (want in (I32, I64) and v.type in (I32, I64)):
            return v
        key = (v, want)
        cast = self.casts.get(key)
        if cast is None:
            cast = Value(want, v.hint)
            self.ops.append(Op(Opcode.CAST, [v], cast))
            self.casts[key] = cast
        return cast
