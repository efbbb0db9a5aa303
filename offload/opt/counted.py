"""Counted two-block loops: the loop shape that ``unroll`` and ``stage`` transform.

A candidate is a natural loop of two blocks: a header ``H`` ending in ``condbr c, ^B, ^exit``
(or the arms swapped with the test negated) and a body ``B`` ending in ``br ^H(..)`` that
passes ``add(k, s)`` for one integer header argument ``k``, with ``s`` and ``n``
loop-invariant and ``c`` one of ``lt(k, n)`` or ``select(gt(s, 0), lt(k, n), _)`` (the
frontend's test for a ``range`` whose step is not a constant). While ``s > 0`` the loop runs
exactly while ``k < n``.
"""

from __future__ import annotations

from dataclasses import dataclass

from offload.ir.cfg import predecessors
from offload.ir.core import Block, Branch, Function, Jump, Op, Value
from offload.ir.ops import Opcode
from offload.ir.types import ScalarType
from offload.opt.util import Loop, const_value, def_blocks, definitions


@dataclass(frozen=True)
class CountedLoop:
    """``k = header.args[k_index]`` steps by ``step`` while below ``bound`` (given step > 0)."""

    header: Block
    body: Block
    k_index: int
    step: Value
    bound: Value

    @property
    def counter(self) -> Value:
        return self.header.args[self.k_index]

    @property
    def exit(self) -> Block:
        """The block the header leaves the loop to."""
        t = self.header.terminator
        assert isinstance(t, Branch)
        return t.else_target if t.then_target is self.body else t.then_target

    def into_body(self) -> list[Value]:
        """The values the header passes to the body's arguments."""
        t = self.header.terminator
        assert isinstance(t, Branch)
        return list(t.then_args if t.then_target is self.body else t.else_args)


def _is_zero(defs: dict[Value, Op], v: Value) -> bool:
    value = const_value(defs, v)
    return isinstance(value, int) and not isinstance(value, bool) and value == 0


def _step_positive(defs: dict[Value, Op], g: Value, s: Value) -> bool:
    """Whether ``g`` is the test ``s > 0`` (written ``gt(s, 0)`` or ``lt(0, s)``)."""
    op = defs.get(g)
    if op is None:
        return False
    if op.opcode is Opcode.GT:
        return op.operands[0] is s and _is_zero(defs, op.operands[1])
    if op.opcode is Opcode.LT:
        return op.operands[1] is s and _is_zero(defs, op.operands[0])
    return False


def _bound(defs: dict[Value, Op], cond: Value, k: Value, s: Value, stay: bool) -> Value | None:
    """``n`` if the loop continues (``cond == stay``) exactly when ``k < n``, given ``s > 0``."""
    op = defs.get(cond)
    if op is None:
        return None
    a = op.operands
    if op.opcode is Opcode.NOT:
        return _bound(defs, a[0], k, s, not stay)
    if op.opcode is Opcode.SELECT and _step_positive(defs, a[0], s):
        return _bound(defs, a[1], k, s, stay)  # the positive-step arm
    if stay and op.opcode is Opcode.LT and a[0] is k:
        return a[1]
    if stay and op.opcode is Opcode.GT and a[1] is k:
        return a[0]
    if not stay and op.opcode is Opcode.GE and a[0] is k:
        return a[1]
    if not stay and op.opcode is Opcode.LE and a[1] is k:
        return a[0]
    return None


def match_counted(
    fn: Function,
    loop: Loop,
    outside: dict[Value, Op] | None = None,
    where: dict[Value, Block] | None = None,
) -> CountedLoop | None:
    """The counted loop ``loop`` is, or ``None``. ``outside`` and ``where`` are
    ``definitions(fn)`` and ``def_blocks(fn)`` when the caller has them (a pass matching
    every loop computes them once, not once a loop)."""
    header = loop.header
    if header is fn.entry or len(loop.blocks) != 2 or len(loop.latches) != 1:
        return None
    body = loop.latches[0]
    t, latch = header.terminator, body.terminator
    if not isinstance(t, Branch) or not isinstance(latch, Jump) or latch.target is not header:
        return None
    if t.then_target is body and t.else_target not in loop.blocks:
        stay = True
    elif t.else_target is body and t.then_target not in loop.blocks:
        stay = False
    else:
        return None
    defs = {op.result: op for op in header.ops + body.ops}
    outside = definitions(fn) if outside is None else outside
    where = def_blocks(fn) if where is None else where

    def invariant(v: Value) -> bool:
        return where.get(v) not in loop.blocks

    for idx, k in enumerate(header.args):
        if not (isinstance(k.type, ScalarType) and k.type.is_int):
            continue
        step_op = defs.get(latch.args[idx])
        if step_op is None or step_op.opcode is not Opcode.ADD or step_op not in body.ops:
            continue
        x, y = step_op.operands
        s = y if x is k else x if y is k else None
        if s is None or not invariant(s):
            continue
        n = _bound({**outside, **defs}, t.cond, k, s, stay)
        if n is None or not invariant(n):
            continue
        return CountedLoop(header, body, idx, s, n)
    return None


def enter_before(
    fn: Function,
    loop: CountedLoop,
    entry: Block,
    blocks: list[Block],
    header_preds: list[Block] | None = None,
) -> None:
    """Make the edges that entered ``loop`` from outside enter ``entry`` instead, and put
    ``blocks`` (new code, ``entry`` among them) just before the loop's header.
    ``header_preds``: the header's predecessors, when the caller has them."""
    header = loop.header
    if header_preds is None:
        header_preds = predecessors(fn)[header]
    for p in dict.fromkeys(header_preds):
        if p is loop.body:
            continue
        t = p.terminator
        if isinstance(t, Jump):
            t.target = entry
        elif isinstance(t, Branch):
            t.then_target = entry if t.then_target is header else t.then_target
            t.else_target = entry if t.else_target is header else t.else_target
    at = fn.blocks.index(header)
    fn.blocks[at:at] = blocks
