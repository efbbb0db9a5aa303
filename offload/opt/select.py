"""Branch merging into selects (pass ``select``; the paper's §4.2 CMOV merge).

A branch whose arms are single blocks with no other predecessor, ending in jumps to one
join block (a diamond), or one such arm jumping to the other target (a triangle), becomes
straight-line code ending in a jump to the join. The arms are walked in step, as in the
paper: two alpha-equivalent ops (equal after renaming the values the walk has already
paired) are emitted once; two ops that differ only in their arguments become one op over
``select``s of the differing arguments. When the heads are not the same operation the walk
looks ahead (``LOOKAHEAD`` ops): if one head pairs with a later op of the other arm (sharing
an operand after renaming), that op is paired at once when it does not depend on the ops
before it (pure ops reorder freely), else the ops before it are emitted alone first, so
that ``1 - c*d`` against ``c*d + 1`` falls back in step after two unmatched ops. Every op
emitted alone is a *mismatch* and must be safe to run on both paths. More than
``options.select_threshold`` mismatches, or an unsafe op, abandons the merge.

Speculation safety: every op is pure, and only a ``LOAD`` can fault (``ops.MAY_FAULT``);
the local-array ops (``ops.LOCAL_OPS``) are never speculated either.
A load paired with a load of the other arm is safe (each path reads the index it would
have read). A load only one arm performs is never speculated: ``if i > 0: x = a[i - 1]``
stays a branch, since nothing here knows the array's extent. A ``uniform`` branch (most
threads take one arm: a stencil's interior test) is never merged.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from offload.ir.cfg import predecessors
from offload.ir.core import Block, Branch, Function, Jump, Op, Value
from offload.ir.ops import LOCAL_OPS, Opcode
from offload.ir.ops import MAY_FAULT as _FAULTS
from offload.ir.types import ArrayType
from offload.opt.base import FunctionPass
from offload.opt.cse import op_key
from offload.opt.util import merge_chains, remove_unreachable, resolve
from offload.options import CompileOptions

MAY_FAULT = _FAULTS | LOCAL_OPS
"""Ops an arm may not run speculatively: faulting reads and local-array state."""

MAX_ARM_OPS = 32
"""Arms longer than this are left as branches (both would run on every path)."""


LOOKAHEAD = 8
"""How far along the other arm a mismatching head looks for its partner."""


@dataclass(frozen=True)
class _Plan:
    """Pair one arm's head with the op ``k`` places along the other arm."""

    then_head: bool
    """Whether the head is the then-arm's (the partner is in the else-arm)."""
    k: int
    hoist: bool
    """The partner uses none of the ops before it: pair it now, out of order."""

    @property
    def cost(self) -> int:
        """Mismatches the plan spends: the ops emitted alone to reach the partner."""
        return 0 if self.hoist else self.k


class _Bail(Exception):
    """The merge is abandoned; the IR is left as it was."""


@dataclass
class _Arm:
    ops: list[Op]
    env: dict[Value, Value]
    """Arm values (and the arm block's arguments) -> values of the merged code."""
    exit_args: list[Value]


class _Merger:
    def __init__(self, cond: Value, threshold: int) -> None:
        self.cond = cond
        self.threshold = threshold
        self.out: list[Op] = []
        self.mismatches = 0

    def select(self, a: Value, b: Value) -> Value:
        if a is b:
            return a
        if isinstance(a.type, ArrayType):
            raise _Bail
        result = Value(a.type)
        self.out.append(Op(Opcode.SELECT, [self.cond, a, b], result))
        return result

    def emit_alone(self, op: Op, arm: _Arm) -> None:
        self.mismatches += 1
        if self.mismatches > self.threshold or op.opcode in MAY_FAULT:
            raise _Bail
        self._copy(op, [resolve(arm.env, v) for v in op.operands], [(arm, op)])

    def _copy(self, op: Op, operands: list[Value], arms: list[tuple[_Arm, Op]]) -> None:
        """Emit ``op`` over ``operands``; each (arm, arm op) pair now names the new value."""
        new = Op(
            op.opcode, operands, Value(op.result.type, op.result.hint), dict(op.attrs), op.span
        )
        self.out.append(new)
        for arm, arm_op in arms:
            arm.env[arm_op.result] = new.result

    @staticmethod
    def _pairable(a: Op, b: Op) -> bool:
        return (
            a.opcode is b.opcode
            and len(a.operands) == len(b.operands)
            and a.result.type == b.result.type
            and op_key(Op(a.opcode, [], a.result, a.attrs), {})
            == op_key(Op(b.opcode, [], b.result, b.attrs), {})
        )

    def try_pair(self, a: Op, arm_a: _Arm, b: Op, arm_b: _Arm) -> bool:
        """Emit ``a`` (then-arm) and ``b`` (else-arm) as one op over selects of the operands
        that differ, if they are the same operation; return whether they were."""
        if not self._pairable(a, b):
            return False
        xs = [resolve(arm_a.env, v) for v in a.operands]
        ys = [resolve(arm_b.env, v) for v in b.operands]
        if any(x is not y and isinstance(x.type, ArrayType) for x, y in zip(xs, ys, strict=True)):
            return False
        operands = [self.select(x, y) for x, y in zip(xs, ys, strict=True)]
        self._copy(a, operands, [(arm_a, a), (arm_b, b)])
        return True

    def alike(self, a: Op, arm_a: _Arm, b: Op, arm_b: _Arm) -> bool:
        """Whether ``try_pair`` would pair ``a`` and ``b`` *and* they share an operand (after
        renaming): evidence enough to reorder the walk around them."""
        if not self._pairable(a, b):
            return False
        xs = [resolve(arm_a.env, v) for v in a.operands]
        ys = [resolve(arm_b.env, v) for v in b.operands]
        if any(x is not y and isinstance(x.type, ArrayType) for x, y in zip(xs, ys, strict=True)):
            return False
        return not xs or any(x is y for x, y in zip(xs, ys, strict=True))

    def lookahead(self, qa: deque[Op], arm_a: _Arm, qb: deque[Op], arm_b: _Arm) -> _Plan | None:
        """The cheapest way past two heads that do not pair: one head pairs with an op
        further along the other arm. That op is paired at once when it does not use the ops
        before it (pure ops reorder freely: no mismatch), else the ops before it are emitted
        alone first, each a mismatch, within the threshold and never a faulting one."""
        budget = self.threshold - self.mismatches
        best: _Plan | None = None
        sides = ((qa, arm_a, qb, arm_b, True), (qb, arm_b, qa, arm_a, False))
        for head_q, head_arm, other_q, other_arm, then_head in sides:
            skipped: set[Value] = set()
            faulting = False
            for k in range(1, min(len(other_q), LOOKAHEAD + 1)):
                skipped.add(other_q[k - 1].result)
                faulting |= other_q[k - 1].opcode in MAY_FAULT
                cand = other_q[k]
                hoist = not any(v in skipped for v in cand.operands)
                if not hoist and (k > budget or faulting):
                    continue
                if not self.alike(head_q[0], head_arm, cand, other_arm):
                    continue
                plan = _Plan(then_head, k, hoist)
                if best is None or (plan.cost, k) < (best.cost, best.k):
                    best = plan
        return best

    def follow(self, plan: _Plan, a: tuple[deque[Op], _Arm], b: tuple[deque[Op], _Arm]) -> None:
        """Carry out a ``lookahead`` plan (``a`` is the then-arm's queue, ``b`` the else's)."""
        (head_q, head_arm), (other_q, other_arm) = (a, b) if plan.then_head else (b, a)
        if not plan.hoist:
            for _ in range(plan.k):
                self.emit_alone(other_q.popleft(), other_arm)
            return  # the heads pair on the next step
        cand = other_q[plan.k]
        del other_q[plan.k]
        head = head_q.popleft()
        if plan.then_head:
            paired = self.try_pair(head, head_arm, cand, other_arm)
        else:
            paired = self.try_pair(cand, other_arm, head, head_arm)
        assert paired, "lookahead pairs only ops that try_pair accepts"

    def merge(self, arm_a: _Arm, arm_b: _Arm) -> list[Value]:
        # Constants cost nothing and never fault: emit them first so that arms differing in
        # a literal pair up as one op over a select.
        consts: dict[object, Value] = {}
        for arm in (arm_a, arm_b):
            for op in arm.ops:
                if op.opcode is not Opcode.CONST:
                    continue
                key = op_key(op, {})
                if key in consts:
                    arm.env[op.result] = consts[key]
                else:
                    self._copy(op, [], [(arm, op)])
                    consts[key] = arm.env[op.result]
        qa = deque(op for op in arm_a.ops if op.opcode is not Opcode.CONST)
        qb = deque(op for op in arm_b.ops if op.opcode is not Opcode.CONST)
        while qa or qb:
            if qa and qb and self.try_pair(qa[0], arm_a, qb[0], arm_b):
                qa.popleft()
                qb.popleft()
                continue
            plan = self.lookahead(qa, arm_a, qb, arm_b) if qa and qb else None
            if plan is not None:
                self.follow(plan, (qa, arm_a), (qb, arm_b))
            elif qa and qa[0].opcode not in MAY_FAULT:
                self.emit_alone(qa.popleft(), arm_a)
            elif qb:
                self.emit_alone(qb.popleft(), arm_b)
            else:
                self.emit_alone(qa.popleft(), arm_a)  # a faulting op: bails
        return [
            self.select(resolve(arm_a.env, x), resolve(arm_b.env, y))
            for x, y in zip(arm_a.exit_args, arm_b.exit_args, strict=True)
        ]


def _arm_block(block: Block, head: Block, preds: dict[Block, list[Block]], entry: Block) -> bool:
    t = block.terminator
    return (
        block is not entry
        and preds[block] == [head]
        and isinstance(t, Jump)
        and t.target is not block
        and t.target is not head
        and len(block.ops) <= MAX_ARM_OPS
    )


def _merge_one(fn: Function, threshold: int) -> bool:
    preds = predecessors(fn)
    for head in fn.blocks:
        t = head.terminator
        if not isinstance(t, Branch) or t.then_target is t.else_target or t.uniform:
            continue  # (a uniform branch: most threads skip the other arm's work)
        then_b, else_b = t.then_target, t.else_target
        then_arm = _arm_block(then_b, head, preds, fn.entry)
        else_arm = _arm_block(else_b, head, preds, fn.entry)
        arms: list[_Arm] = []
        for is_arm, block, args in (
            (then_arm, then_b, t.then_args),
            (else_arm, else_b, t.else_args),
        ):
            env = dict(zip(block.args, args, strict=True))
            jt = block.terminator
            if is_arm and isinstance(jt, Jump):
                arms.append(_Arm(block.ops, env, jt.args))
            else:
                arms.append(_Arm([], {}, args))  # the branch goes straight to the join
        then_join = then_b.terminator.target if then_arm else then_b  # type: ignore[union-attr]
        else_join = else_b.terminator.target if else_arm else else_b  # type: ignore[union-attr]
        if not (then_arm or else_arm) or then_join is not else_join or then_join is head:
            continue
        join = then_join
        merger = _Merger(t.cond, threshold)
        try:
            join_args = merger.merge(arms[0], arms[1])
        except _Bail:
            continue
        head.ops.extend(merger.out)
        head.terminator = Jump(join, join_args, t.span)
        remove_unreachable(fn)
        merge_chains(fn)
        return True
    return False


@dataclass(frozen=True)
class BranchToSelect(FunctionPass):
    """Merge small side-effect-free diamonds and triangles into selects (paper §4.2)."""

    name = "select"
    threshold: int = 4
    """Most mismatching (unpaired) ops tolerated in one merge."""

    @classmethod
    def from_options(cls, options: CompileOptions) -> BranchToSelect:
        return cls(threshold=options.select_threshold)

    def rewrite(self, fn: Function) -> Function:
        remove_unreachable(fn)
        while _merge_one(fn, self.threshold):
            pass
        return fn
