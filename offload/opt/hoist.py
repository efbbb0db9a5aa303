"""Hoist work that does not depend on the index out of the element loop (issue 17, item 8).

LICM moves invariant code out of the element function's own loops; this pass moves it out
of the *implicit* loop over the index space. numba's ``go_fast`` written as an element
function computes ``trace += np.tanh(a[k, k])`` over the diagonal for every element: after
this pass the trace loop runs once per call, in a *prologue*, and every element reads its
result.

The split. A block ``X`` is a *split point* when

* every execution of the element function passes through ``X`` (``X`` post-dominates the
  entry) and never comes back before it (no edge from ``X`` onwards into a block that runs
  before it);
* the blocks that run before ``X`` -- ``P``: those reachable from the entry without passing
  through ``X`` -- branch only on values that do not depend on the index, hold only pure
  ops (``invariance.MOVABLE``: no GPU tiling op, nothing a later feature adds with a side effect),
  and return nothing.

Then every element runs the same path through ``P`` with the same invariant values: the
invariant part of ``P`` is the same computation for every element. The pass takes the
latest split point (the one that hoists the most) and builds

* the prologue: ``P``'s invariant ops and blocks (index-dependent ones dropped), ending in
  a block that returns the invariant values the rest of the function uses and that are
  costly to recompute: results of loops (block arguments of ``P``), of transcendental
  math calls, or the arguments ``X`` receives;
* the main function: a new entry that reads each hoisted value from a one-element array
  capture, recomputes the cheap values and the index-dependent ones of ``P`` that ``X``
  onwards use (constants, shapes, ``a[i, j]``...), and jumps to ``X``. ``P``'s blocks are
  gone from it.

The pair is one ``Function`` with ``Function.prologue`` set (the printer shows both; the
interpreter, the specification, runs the prologue once before the elements; the driver
runs it as a one-element launch of the same target before the main kernel).

Rules that keep it exact:

* Only work every element runs unconditionally is hoisted (``P`` is always executed, its
  control flow is the same for every element), so nothing is speculated: a read that no
  element makes is never made by the prologue.
* Reads of captured arrays (``LOAD``) are hoisted like any pure op: every element makes
  the same read at the same indices, so the prologue's read faults exactly when every
  element's would (undefined in the default mode). With ``bounds_check`` on the pass does
  not run, so that an out-of-bounds read is still reported at the element index it names.
* A call with no element (an empty shape) runs no prologue.
* Worth it only for costly work: the split is made only where ``P`` holds a loop or a
  transcendental math call that does not depend on the index; cheap invariant values
  are recomputed per element.
* Where an index-dependent value is carried through ``P``'s block arguments and used
  after ``X`` (``acc = a[i, j]`` then a loop adding to it), that split point is refused
  (an earlier one may still serve).
"""

from __future__ import annotations

from dataclasses import dataclass

from offload.ir.cfg import predecessors, reverse_postorder
from offload.ir.core import Block, Branch, Capture, Function, Jump, Op, Return, Value
from offload.ir.ops import Opcode
from offload.ir.types import INDEX, ArrayType, ScalarType
from offload.opt.base import FunctionPass
from offload.opt.invariance import (
    MOVABLE,
    costly,
    edges,
    index_dependent,
    split_points,
    terminator_uses,
)
from offload.options import CompileOptions

MAX_TRIES = 4
"""Split points tried, latest first, before the pass gives up on a function."""


@dataclass(frozen=True)
class HoistInvariants(FunctionPass):
    """Index-independent loops and transcendental calls -> a once-per-call prologue."""

    name = "hoist"

    @classmethod
    def from_options(cls, options: CompileOptions) -> HoistInvariants:
        return cls()

    @staticmethod
    def enabled(options: CompileOptions) -> bool:
        """Off with ``bounds_check``: an out-of-bounds read must name its element."""
        return not options.bounds_check

    def rewrite(self, fn: Function) -> Function:
        if fn.prologue is not None or fn.blocking or fn.n_index == 0:
            return fn
        rpo = reverse_postorder(fn)
        preds = predecessors(fn)
        dep = index_dependent(fn, rpo)
        number = {b: k for k, b in enumerate(rpo)}
        points = [(fn.entry, set[Block]()), *split_points(fn, rpo, preds, dep)]
        # The latest split points first (they hoist the most); a few tries at most, so
        # that a long function of refused points stays linear.
        for x, before in list(reversed(points))[:MAX_TRIES]:
            split = _Split(fn, x, before, dep, number)
            if split.build():
                return split.result()
        return fn


class _Split:
    """One attempt at splitting ``fn`` at ``x`` (``P`` = ``before``)."""

    def __init__(
        self,
        fn: Function,
        x: Block,
        before: set[Block],
        dep: set[Value],
        number: dict[Block, int],
    ) -> None:
        self.fn, self.x, self.before, self.dep, self.number = fn, x, before, dep, number
        self.x_inv = _leading_invariants(fn, x, dep)
        self.defs: dict[Value, Op] = {op.result: op for b in before for op in b.ops}
        self.defs.update((op.result, op) for op in self.x_inv)
        self.block_args: set[Value] = {a for b in before if b is not fn.entry for a in b.args}
        self.capture_params = list(fn.capture_params)  # the entry's, before a split there
        self.new_params = [Value(p.type, p.hint) for p in fn.params]
        self.param_map = dict(zip(fn.params, self.new_params, strict=True))
        self.entry = Block(hint="hoisted")
        self.mapped: dict[Value, Value] = dict(self.param_map)
        self.hoisted: list[Value] = []
        self.loads: list[tuple[Value, Value]] = []  # (hoisted value, its array param)
        self.zero: Value | None = None

    # -- the main function's new entry ------------------------------------------------

    def build(self) -> bool:
        """Materialise in the new entry every value defined in ``P`` that ``X`` onwards
        uses, then rewrite those uses; ``False`` (and ``fn`` untouched: the new ops are all
        in the new entry) where one cannot be, or where nothing costly would be hoisted."""
        if not self._worth_it():
            return False
        into_x = [args for b in self.before for t, args in edges(b) if t is self.x]
        jump_args: list[Value] = []
        for k in range(len(self.x.args) if self.x is not self.fn.entry else 0):
            incoming = {args[k] for args in into_x}
            if len(incoming) == 1:
                got = self._mat(next(iter(incoming)))
            elif any(v in self.dep for v in incoming):
                return False
            else:
                got = self._hoist_x_arg(k)
            if got is None:
                return False
            jump_args.append(got)
        after = self._after()
        moved = set(map(id, self.x_inv))
        for block in after:
            ops = [op for op in block.ops if id(op) not in moved]
            uses = [v for op in ops for v in op.operands] + terminator_uses(block)
            if any(self._use(v) is None for v in uses):
                return False
        if not self.hoisted:
            return False
        # Every use has its value now: rewrite (``_use`` is memoised, it adds no op).
        self.x.ops = [op for op in self.x.ops if id(op) not in moved]
        if self.x is self.fn.entry:
            self.x.args = []  # the parameters: their uses now read the new entry's
        for block in after:
            for op in block.ops:
                op.operands = [self._value(v) for v in op.operands]
            self._rewrite_terminator(block)
        self.entry.terminator = Jump(self.x, jump_args)
        return True

    def _worth_it(self) -> bool:
        before, number = self.before, self.number
        for b in before:
            if any(s in before and number[s] <= number[b] for s in b.successors()):
                return True  # P holds a loop (a retreating edge inside P)
        return any(costly(op) for v, op in self.defs.items() if v not in self.dep)

    def _after(self) -> list[Block]:
        return [b for b in self.fn.blocks if b not in self.before]

    def _use(self, v: Value) -> Value | None:
        if v in self.defs or v in self.block_args or v in self.param_map:
            return self._mat(v)
        return v

    def _value(self, v: Value) -> Value:
        got = self._use(v)
        assert got is not None
        return got

    def _rewrite_terminator(self, block: Block) -> None:
        t = block.terminator
        if isinstance(t, Return):
            t.values = [self._value(v) for v in t.values]
        elif isinstance(t, Jump):
            t.args = [self._value(v) for v in t.args]
        elif isinstance(t, Branch):
            t.cond = self._value(t.cond)
            t.then_args = [self._value(v) for v in t.then_args]
            t.else_args = [self._value(v) for v in t.else_args]

    def _mat(self, v: Value) -> Value | None:
        """``v``'s value in the new entry (memoised)."""
        got = self.mapped.get(v)
        if got is not None:
            return got
        if v in self.block_args:
            return self._hoist(v) if v not in self.dep else None
        op = self.defs.get(v)
        if op is None:
            return v  # defined after P (not reached from the entry's materialisation)
        if v not in self.dep and costly(op):
            return self._hoist(v)
        operands: list[Value] = []
        for operand in op.operands:
            got = self._mat(operand)
            if got is None:
                return None
            operands.append(got)
        new = Value(v.type, v.hint)
        self.entry.ops.append(Op(op.opcode, operands, new, dict(op.attrs), op.span))
        self.mapped[v] = new
        return new

    def _hoist(self, v: Value) -> Value:
        assert isinstance(v.type, ScalarType)
        self.hoisted.append(v)
        return self._load(v, v.type)

    def _hoist_x_arg(self, k: int) -> Value:
        arg = self.x.args[k]
        assert isinstance(arg.type, ScalarType)
        self.hoisted.append(arg)
        return self._load(arg, arg.type)

    def _load(self, v: Value, t: ScalarType) -> Value:
        array = Value(ArrayType(t, 1), f"hoisted{len(self.loads)}")
        if self.zero is None:
            self.zero = Value(INDEX)
            self.entry.ops.append(Op(Opcode.CONST, [], self.zero, {"value": 0}))
        got = Value(t, v.hint)
        self.entry.ops.append(Op(Opcode.LOAD, [array, self.zero], got))
        self.loads.append((v, array))
        self.mapped[v] = got
        return got

    # -- the result ---------------------------------------------------------------------

    def result(self) -> Function:
        fn = self.fn
        arrays = [a for _, a in self.loads]
        self.entry.args = [*self.new_params, *arrays]
        captures = [
            *fn.captures,
            *(Capture(f"hoisted {v.hint or k}", a.type) for k, (v, a) in enumerate(self.loads)),
        ]
        blocks = [self.entry, *self._after()]
        main = Function(fn.name, blocks, fn.n_index, captures, list(fn.result_types), fn.span)
        main.prologue = self._prologue()
        return main

    def _prologue(self) -> Function:
        """``P``'s invariant part, returning the hoisted values from a copy of ``X``."""
        fn, dep = self.fn, self.dep
        index = Value(INDEX, "_")
        caps = [Value(p.type, p.hint) for p in self.capture_params]
        vmap: dict[Value, Value] = dict(zip(self.capture_params, caps, strict=True))
        bmap: dict[Block, Block] = {}
        order = [b for b in fn.blocks if b in self.before]
        for b in order:
            nb = Block(hint=b.hint)
            if b is not fn.entry:
                for a in b.args:
                    if a not in dep:
                        vmap[a] = Value(a.type, a.hint)
                        nb.args.append(vmap[a])
            bmap[b] = nb
        x_keep = [k for k, a in enumerate(self.x.args) if a in self.hoisted]
        done = Block(hint="hoisted")
        for k in x_keep:
            a = self.x.args[k]
            vmap[a] = Value(a.type, a.hint)
            done.args.append(vmap[a])
        for b in order:
            nb = bmap[b]
            for op in b.ops:
                if op.result in dep:
                    continue
                new = Value(op.result.type, op.result.hint)
                nb.ops.append(
                    Op(op.opcode, [vmap[x] for x in op.operands], new, dict(op.attrs), op.span)
                )
                vmap[op.result] = new

            def edge(target: Block, args: list[Value]) -> tuple[Block, list[Value]]:
                if target is self.x:
                    return done, [vmap[args[k]] for k in x_keep]
                return bmap[target], [
                    vmap[v] for v, p in zip(args, target.args, strict=True) if p not in dep
                ]

            t = b.terminator
            if isinstance(t, Jump):
                tgt, args = edge(t.target, t.args)
                nb.terminator = Jump(tgt, args, t.span)
            elif isinstance(t, Branch):
                then_t, then_a = edge(t.then_target, t.then_args)
                else_t, else_a = edge(t.else_target, t.else_args)
                nb.terminator = Branch(
                    vmap[t.cond], then_t, then_a, else_t, else_a, t.span, t.uniform
                )
        for op in self.x_inv:
            new = Value(op.result.type, op.result.hint)
            done.ops.append(
                Op(op.opcode, [vmap[x] for x in op.operands], new, dict(op.attrs), op.span)
            )
            vmap[op.result] = new
        done.terminator = Return([vmap[v] for v in self.hoisted])
        entry = bmap.get(fn.entry, done)
        entry.args = [index, *caps]
        result_types: list[ScalarType] = []
        for v in self.hoisted:
            assert isinstance(v.type, ScalarType)
            result_types.append(v.type)
        return Function(
            f"{fn.name}.prologue",
            [
                entry,
                *(bmap[b] for b in order if b is not fn.entry),
                *([done] * (entry is not done)),
            ],
            1,
            list(fn.captures),
            result_types,
            fn.span,
        )


def _leading_invariants(fn: Function, x: Block, dep: set[Value]) -> list[Op]:
    """The ops of the split block ``x`` that the prologue may compute too: pure, not
    index-dependent, and (``x`` may head a loop) not depending on ``x``'s own arguments.
    ``x`` runs at least once per element, so they run for every element."""
    local: set[Value] = set(x.args) if x is not fn.entry else set()
    out: list[Op] = []
    for op in x.ops:
        if (
            op.opcode in MOVABLE
            and op.result not in dep
            and not any(v in local for v in op.operands)
        ):
            out.append(op)
        else:
            local.add(op.result)
    return out
