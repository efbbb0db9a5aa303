"""Runtime unrolling of counted inner loops (pass ``unroll``).

A reduction loop ``for k in range(a, n, s): acc += x[k] * y[k]`` is latency-bound on a
GPU: each iteration's load feeds the next add, and an in-order core waits a full memory
latency per iteration. This pass puts an unrolled copy ``U`` of such a loop in front of it:
``U``'s body is ``factor`` chained copies of the original body, and ``U`` runs only while
all ``factor`` iterations are certain to run, so their loads are independent and overlap.
The remaining (< ``factor``) iterations, and a step that is not positive, fall through to
the original loop, unchanged. The iterations run in their original order (float sums are
never reassociated), so results are bit-exact.

Candidates are the counted two-block loops of ``offload.opt.counted`` (header ``H``, body
``B``, counter ``k`` stepping by ``s`` while below ``n``). The result::

    ^pre(args):      m = n - (factor-1)*s ; condbr guard(s), ^U(args), ^H(args)
    ^U(args):        condbr lt(k, m), ^Ubody, ^H(args)
    ^Ubody:          factor copies of H's and B's ops ; br ^U(args after factor iterations)

``m`` is computed without wrapping: range facts bound ``n`` and ``s``, and ``guard``
checks at run time whatever they do not prove (``1 <= s <= limit``); with no usable
``limit`` the loop is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from offload.analysis.ranges import Range, RangeFacts, type_range
from offload.ir.cfg import predecessors
from offload.ir.core import Block, Branch, Function, Jump, Op, Value
from offload.ir.ops import Opcode
from offload.ir.types import BOOL, ScalarType
from offload.opt.base import FunctionPass
from offload.opt.counted import CountedLoop, enter_before, match_counted
from offload.opt.util import (
    Loop,
    const_value,
    def_blocks,
    definitions,
    edge_args,
    natural_loops,
)


@dataclass
class _Scope:
    """What matching every loop needs, computed once a pass: the function's definitions,
    the block defining each value, and each block's predecessors. Unrolling one loop
    leaves these right for the others (see ``Unroll.rewrite``)."""

    defs: dict[Value, Op]
    where: dict[Value, Block]
    preds: dict[Block, list[Block]]


def _match(fn: Function, loop: Loop, max_ops: int, scope: _Scope) -> CountedLoop | None:
    """The counted loop ``loop`` is if it is worth unrolling, or ``None``."""
    counted = match_counted(fn, loop, scope.defs, scope.where)
    if counted is None or len(counted.header.ops) + len(counted.body.ops) > max_ops:
        return None
    s, n = counted.step, counted.bound
    if _constant_trips(loop, counted.k_index, s=s, n=n, scope=scope):
        return None  # NVVM unrolls a known trip count fully; two loops it would not
    return counted


def _constant_trips(loop: Loop, idx: int, *, s: Value, n: Value, scope: _Scope) -> bool:
    """Whether the start, the step and the bound of the counter are all constants."""
    defs = scope.defs
    if const_value(defs, s) is None or const_value(defs, n) is None:
        return False
    starts = [
        args[idx]
        for p in scope.preds[loop.header]
        if p not in loop.blocks
        for args in edge_args(p, loop.header)
    ]
    return bool(starts) and all(const_value(defs, v) is not None for v in starts)


def _plan(n: Range, s: Range, t: ScalarType, times: int) -> tuple[int, int | None] | None:
    """``(limit, floor)`` such that ``n - times*s`` cannot wrap when ``1 <= s <= limit`` and
    (unless ``floor`` is ``None``) ``n >= floor``; ``None`` if no such bounds are usable.

    Then ``times*s <= times*limit <= tmax``, ``n - times*s <= n.hi - times <= tmax`` and
    ``n - times*s >= max(n.lo, floor) - times*limit >= tmin``.
    """
    full = type_range(t)
    limit = min((n.lo - full.lo) // times, full.hi // times, s.hi)
    if limit >= max(1, s.lo):
        # Tighter where n's bound leaves room: steps up to (tmax - n.hi + 1) / (times+1)
        # keep each add of an unrolled trip (k + s, ..., k + (times+1)*s from k < n)
        # inside the type by interval facts alone, so range facts keep the counter's lower
        # bound through U (and fold a negative-index wrap test on it).
        room = (full.hi - n.hi + 1) // (times + 1)
        return (min(limit, room) if room >= max(1, s.lo) else limit), None
    if not t.is_signed:
        return None  # n near 0 would need a floor that excludes the loops worth unrolling
    # Checking n at run time: split the headroom, steps up to tmax/(2*times) and n at least
    # tmin + times*limit (about tmin/2), which excludes no realistic loop.
    limit = min(full.hi // (2 * times), s.hi)
    return (limit, full.lo + times * limit) if limit >= max(1, s.lo) else None


def _copy_iteration(loop: CountedLoop, current: list[Value], out: list[Op]) -> list[Value]:
    """Append to ``out`` one iteration of ``loop`` (its header's ops, then its body's) for
    header arguments ``current``; return the header arguments of the next iteration."""
    vmap: dict[Value, Value] = dict(zip(loop.header.args, current, strict=True))

    def v(x: Value) -> Value:
        return vmap.get(x, x)  # values defined outside the loop are shared

    t = loop.header.terminator
    latch = loop.body.terminator
    assert isinstance(t, Branch) and isinstance(latch, Jump)
    into_body = t.then_args if t.then_target is loop.body else t.else_args
    for op in loop.header.ops:
        vmap[op.result] = Value(op.result.type, op.result.hint)
        out.append(
            Op(op.opcode, [v(x) for x in op.operands], vmap[op.result], dict(op.attrs), op.span)
        )
    vmap.update(zip(loop.body.args, [v(x) for x in into_body], strict=True))
    for op in loop.body.ops:
        vmap[op.result] = Value(op.result.type, op.result.hint)
        out.append(
            Op(op.opcode, [v(x) for x in op.operands], vmap[op.result], dict(op.attrs), op.span)
        )
    return [v(x) for x in latch.args]


def _unroll(fn: Function, loop: CountedLoop, factor: int, facts: RangeFacts, scope: _Scope) -> bool:
    header, k = loop.header, loop.header.args[loop.k_index]
    assert isinstance(k.type, ScalarType)
    rn, rs = facts.range_of(loop.bound, header), facts.range_of(loop.step, header)
    rk = facts.range_of(k, header)
    assert rn is not None and rs is not None and rk is not None  # integers have a range
    if rn.hi - (factor - 1) * max(rs.lo, 1) <= rk.lo:
        return False  # U's test k < n - (factor-1)*s can never pass: fewer trips than that
    plan = _plan(rn, rs, k.type, factor - 1)
    if plan is None:
        return False
    limit, floor = plan

    def fresh(hint: str) -> Block:
        return Block(args=[Value(a.type, a.hint) for a in header.args], hint=hint)

    pre, head, body = fresh("unroll_pre"), fresh("unroll"), Block(hint="unroll_body")

    def emit(
        block: Block, opcode: Opcode, operands: list[Value], t: ScalarType, **attrs: object
    ) -> Value:
        result = Value(t)
        block.ops.append(Op(opcode, operands, result, dict(attrs)))
        return result

    # The checks first; m = n - (factor-1)*s after them, in a block of its own that only
    # the passing edge reaches: m is exact (no wrap) there (see _plan), and the range facts
    # of that edge (1 <= s <= limit) bound m, so they bound the counter U tests against m.
    checks: list[Value] = []
    if rs.lo < 1:  # a step that is not positive runs the original loop only
        one = emit(pre, Opcode.CONST, [], k.type, value=1)
        checks.append(emit(pre, Opcode.GE, [loop.step, one], BOOL))
    if rs.hi > limit:
        top = emit(pre, Opcode.CONST, [], k.type, value=limit)
        checks.append(emit(pre, Opcode.LE, [loop.step, top], BOOL))
    if floor is not None:
        low = emit(pre, Opcode.CONST, [], k.type, value=floor)
        checks.append(emit(pre, Opcode.GE, [loop.bound, low], BOOL))
    while len(checks) > 1:
        checks = [emit(pre, Opcode.AND, checks[:2], BOOL), *checks[2:]]
    bound = pre
    if checks:
        bound = fresh("unroll_bound")
        pre.terminator = Branch(checks[0], bound, list(pre.args), header, list(pre.args))
    s_const = const_value(scope.defs, loop.step)
    if isinstance(s_const, int):
        times_s = emit(bound, Opcode.CONST, [], k.type, value=(factor - 1) * s_const)
    else:
        times = emit(bound, Opcode.CONST, [], k.type, value=factor - 1)
        times_s = emit(bound, Opcode.MUL, [loop.step, times], k.type)
    m = emit(bound, Opcode.SUB, [loop.bound, times_s], k.type)
    bound.terminator = Jump(head, list(bound.args))

    # U continues while k + (factor-1)*s < n holds exactly (k < m, m exact): with s >= 1 the
    # factor iterations k, k+s, ..., k+(factor-1)*s all pass the original test `k < n` and
    # none of the adds between them wraps. So every copied op -- each LOAD in particular,
    # the only ops that may fault -- runs exactly when, and with the same operands as, the
    # original loop would have run it; U never executes an iteration the original skips.
    # The test carries the factor: ``offload.opt.reroll`` takes it as the certificate that
    # entering U with some arguments is entering H with them.
    go = emit(head, Opcode.LT, [head.args[loop.k_index], m], BOOL, unrolled=factor)
    t = header.terminator
    assert isinstance(t, Branch)
    head.terminator = Branch(go, body, [], header, list(head.args), t.span)
    current = list(head.args)
    for _ in range(factor):
        current = _copy_iteration(loop, current, body.ops)
    latch = loop.body.terminator
    assert isinstance(latch, Jump)
    body.terminator = Jump(head, current, latch.span)

    # The edges that entered the loop now enter the guard.
    blocks = list(dict.fromkeys([pre, bound, head, body]))
    enter_before(fn, loop, pre, blocks, scope.preds[header])
    return True


@dataclass(frozen=True)
class Unroll(FunctionPass):
    """Runtime-unroll counted two-block inner loops ``factor`` times (bit-exact)."""

    name = "unroll"
    factor: int = 4
    """Iterations per trip of the unrolled loop (at least 2)."""
    max_body_ops: int = 60
    """Loops whose header and body hold more ops are left alone (code size)."""

    def rewrite(self, fn: Function) -> Function:
        if self.factor < 2:
            return fn
        # One analysis for every loop (issue 19: one per loop was quadratic). Unrolling one
        # loop leaves the facts of the others sound: the values reaching each block are the
        # same, and the loops matched are two-block inner loops, disjoint from each other.
        facts: RangeFacts | None = None
        scope = _Scope(definitions(fn), def_blocks(fn), predecessors(fn))
        for loop in natural_loops(fn):
            counted = _match(fn, loop, self.max_body_ops, scope)
            if counted is not None:
                facts = facts or RangeFacts(fn)
                _unroll(fn, counted, self.factor, facts, scope)
        return fn
