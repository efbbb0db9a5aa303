"""Loop-invariant code motion (pass ``licm``).

Ops of a natural loop whose operands are all defined outside it (or are themselves
hoisted) move to the loop's preheader, which is created when the loop has none. Every op
is pure and only ``LOAD`` can fault (``ops.MAY_FAULT``), so non-loads move freely (they
may then run when the loop runs zero times, harmlessly). A ``LOAD`` moves only from a block
that surely runs on the loop's first iteration when the preheader runs: the header, and
blocks reached from it by jumps or by a header branch that range facts decide for the
loop's initial values (``for k in range(3)`` always enters its body).
"""

from __future__ import annotations

from dataclasses import dataclass

from offload.analysis.range_transfer import transfer
from offload.analysis.ranges import Range, RangeFacts
from offload.ir.cfg import predecessors, reverse_postorder
from offload.ir.core import Block, Branch, Function, Jump, Op, Value
from offload.ir.ops import COMPARE, LOCAL_OPS, MAY_FAULT
from offload.ir.types import ScalarType
from offload.opt.base import FunctionPass
from offload.opt.util import Loop, def_blocks, edge_args, natural_loops, remove_unreachable


class _Facts:
    """Range facts of the function, computed when first asked for and kept while the CFG
    keeps its blocks: hoisting moves pure ops without changing any value's range, so one
    analysis serves every loop (once per loop made compile time quadratic in the number of
    loops, issue 19). A preheader made after the analysis is a new block with new arguments:
    an argument's range is the union of the values its incoming edges pass."""

    def __init__(self, fn: Function) -> None:
        self.fn = fn
        self._facts: RangeFacts | None = None
        self.incoming: dict[Value, list[tuple[Value, Block]]] = {}
        """A new preheader's argument -> (value passed, block passing it) per edge."""

    def range_of(self, v: Value, at: Block) -> Range | None:
        if self._facts is None:
            self._facts = RangeFacts(self.fn)
        sources = self.incoming.get(v)
        if sources is None:
            return self._facts.range_of(v, at)
        joined: Range | None = None
        for src, block in sources:
            r = self.range_of(src, block)
            if r is None:
                return None
            joined = r if joined is None else joined.union(r)
        return joined


class _Scope:
    """The CFG facts every loop's hoisting needs, computed once a pass and kept up to date
    as preheaders are made and ops move (recomputing them once per loop was quadratic in
    the number of loops, issue 19): the loops, innermost first; each block's predecessors;
    the block defining each value; a position for each block in reverse postorder (a
    preheader goes just before its header)."""

    def __init__(self, fn: Function) -> None:
        self.loops = natural_loops(fn)
        self.preds = predecessors(fn)
        self.where = def_blocks(fn)
        self.rank: dict[Block, float] = {b: float(k) for k, b in enumerate(reverse_postorder(fn))}

    def added_preheader(self, loop: Loop, pre: Block, outside: list[Block]) -> None:
        header = loop.header
        self.preds[pre] = list(outside)
        self.preds[header] = [p for p in self.preds[header] if p in loop.blocks] + [pre]
        self.where.update((a, pre) for a in pre.args)
        self.rank[pre] = self.rank[header] - 0.5  # each header gets at most one
        for outer in self.loops:
            if outer is not loop and header in outer.blocks:
                outer.blocks.add(pre)

    def in_order(self, loop: Loop) -> list[Block]:
        """The loop's blocks in reverse postorder (every def before its uses)."""
        return sorted((b for b in loop.blocks if b in self.rank), key=self.rank.__getitem__)


def _preheader(fn: Function, loop: Loop, facts: _Facts, scope: _Scope) -> Block | None:
    """The loop's preheader (a block outside it jumping only to the header), made if need be."""
    header = loop.header
    if header is fn.entry:
        return None
    outside = [p for p in scope.preds[header] if p not in loop.blocks]
    if len(outside) == 1 and isinstance(outside[0].terminator, Jump):
        return outside[0]
    pre = Block(args=[Value(a.type, a.hint) for a in header.args], hint="preheader")
    pre.terminator = Jump(header, list(pre.args))
    for p in dict.fromkeys(outside):
        for passed in edge_args(p, header):
            for a, v in zip(pre.args, passed, strict=True):
                facts.incoming.setdefault(a, []).append((v, p))
        t = p.terminator
        if isinstance(t, Jump):
            t.target = pre
        elif isinstance(t, Branch):
            if t.then_target is header:
                t.then_target = pre
            if t.else_target is header:
                t.else_target = pre
    fn.blocks.insert(fn.blocks.index(header), pre)
    scope.added_preheader(loop, pre, list(dict.fromkeys(outside)))
    return pre


def _first_iteration_blocks(loop: Loop, pre: Block, facts: _Facts) -> set[Block]:
    """Loop blocks that surely run whenever the preheader does."""
    header = loop.header
    sure = {header}
    (init,) = edge_args(pre, header)
    entry_value = dict(zip(header.args, init, strict=True))
    block = header
    while True:
        t = block.terminator
        nxt: Block | None = None
        if isinstance(t, Jump):
            nxt = t.target
        elif isinstance(t, Branch) and block is header:
            taken = _decide_on_entry(header, t.cond, entry_value, facts, pre)
            if taken is not None:
                nxt = t.then_target if taken else t.else_target
        if nxt is None or nxt is header or nxt not in loop.blocks or nxt in sure:
            return sure
        sure.add(nxt)
        block = nxt


def _decide_on_entry(
    header: Block, cond: Value, entry_value: dict[Value, Value], facts: _Facts, pre: Block
) -> bool | None:
    op = next((o for o in header.ops if o.result is cond), None)
    if op is None or op.opcode not in COMPARE:
        return None
    ranges: list[Range | None] = []
    for v in op.operands:
        if any(o.result is v for o in header.ops):
            return None  # computed in the header from this iteration's values
        ranges.append(facts.range_of(entry_value.get(v, v), pre))
    if any(r is None for r in ranges):
        return None
    assert isinstance(op.result.type, ScalarType)
    r = transfer(op, ranges, op.result.type)
    return None if r.const is None else bool(r.const)


def _hoist(fn: Function, loop: Loop, facts: _Facts, scope: _Scope) -> bool:
    pre = _preheader(fn, loop, facts, scope)
    if pre is None:
        return False
    sure = _first_iteration_blocks(loop, pre, facts)
    where = scope.where
    hoisted: set[Value] = set()
    moved: list[Op] = []
    for block in scope.in_order(loop):
        kept = []
        for op in block.ops:
            invariant = all(v in hoisted or where.get(v) not in loop.blocks for v in op.operands)
            if op.opcode in LOCAL_OPS:  # local-array state stays where it is ordered
                invariant = False
            if invariant and (op.opcode not in MAY_FAULT or block in sure):
                hoisted.add(op.result)
                moved.append(op)
            else:
                kept.append(op)
        block.ops = kept
    pre.ops.extend(moved)
    where.update((op.result, pre) for op in moved)
    return bool(moved)


@dataclass(frozen=True)
class LoopInvariantCodeMotion(FunctionPass):
    """Hoist loop-invariant ops into preheaders (loads only where surely executed)."""

    name = "licm"

    def rewrite(self, fn: Function) -> Function:
        remove_unreachable(fn)
        facts = _Facts(fn)
        scope = _Scope(fn)
        for loop in scope.loops:
            _hoist(fn, loop, facts, scope)
        return fn
