"""Which range facts a block needs, and dominance in constant time: what keeps
``RangeFacts`` near-linear in the size of the function (issue 19 item 5).

A block's facts are inherited by every block it dominates. Kept whole, a fact learnt once
(``k >= 2`` after a loop over ``k``) was copied into every later block and joined again at
every later merge, so a function with N loops in a row did O(N) work per block: O(N**2) per
analysis. A fact about ``v`` can only be asked for where ``v`` is *relevant*: used by an op
or a terminator there or in a block reachable from there, or looked through from such a use
(the index simplifier expands an operand into a polynomial over its defining ops, at most
``LOOK_THROUGH`` of them deep; branch narrowing looks through the comparison it tests).
Facts about other values are dropped, which loses nothing anyone can ask for.
"""

from __future__ import annotations

from collections import deque

from offload.ir.cfg import dominator_tree, predecessors, reverse_postorder
from offload.ir.core import Block, Branch, Function, Jump, Op, Return, Value
from offload.ir.ops import Opcode

LOOK_THROUGH = 10
"""How many defining ops deep a use makes values relevant: more than the polynomial
expander (``offload.opt.poly``, 9), ``_multiple_of`` in ``offload.opt.divmod`` (9) and
branch narrowing (``RangeFacts._narrow``, 6) look."""


class Dominance:
    """Dominance between reachable blocks by dominator-tree intervals: O(1) a query."""

    def __init__(self, fn: Function) -> None:
        children = dominator_tree(fn)
        self._enter: dict[Block, int] = {}
        self._leave: dict[Block, int] = {}
        if not fn.blocks:
            return
        clock = 0
        stack: list[tuple[Block, int]] = [(fn.entry, 0)]
        self._enter[fn.entry] = clock
        while stack:
            block, k = stack.pop()
            kids = children.get(block, [])
            if k < len(kids):
                stack.append((block, k + 1))
                clock += 1
                self._enter[kids[k]] = clock
                stack.append((kids[k], 0))
            else:
                clock += 1
                self._leave[block] = clock

    def strictly_dominates(self, a: Block | None, b: Block) -> bool:
        """Whether ``a`` dominates ``b`` and is not ``b``. An unreachable ``b`` is
        dominated by every block (the usual convention)."""
        if a is None or a is b:
            return False
        if b not in self._enter:
            return True
        if a not in self._enter:
            return False
        return self._enter[a] < self._enter[b] and self._leave[b] < self._leave[a]


def relevant_values(fn: Function, defs: dict[Value, Op]) -> dict[Block, set[Value]]:
    """For each block, the values whose facts may be asked for at its entry or later."""
    gen: dict[Block, set[Value]] = {}
    for block in fn.blocks:
        used: list[Value] = [v for op in block.ops for v in op.operands]
        t = block.terminator
        if isinstance(t, Branch):
            used += [t.cond, *t.then_args, *t.else_args]
        elif isinstance(t, Jump):
            used += t.args
        elif isinstance(t, Return):
            used += t.values
        # a constant's range is its value everywhere: no block needs a fact about it (and
        # the constants a function hoists to its entry would be live in every block)
        mine = {*block.args, *(op.result for op in block.ops)}  # no facts at its entry
        gen[block] = {
            v for v in _looked_through(used, defs) if v not in mine and not _is_const(v, defs)
        }
    defined = {b: {*b.args, *(op.result for op in b.ops)} for b in fn.blocks}
    live: dict[Block, set[Value]] = {b: set(gen[b]) for b in fn.blocks}
    preds = predecessors(fn)
    # Backward dataflow to a fixpoint, blocks in postorder so most facts settle in a pass.
    work = deque(reversed(reverse_postorder(fn)))
    queued = set(work)
    while work:
        block = work.popleft()
        queued.discard(block)
        out: set[Value] = set()
        for succ in block.successors():
            if succ in live:
                out |= live[succ]
        new = gen[block] | (out - defined[block])
        if new != live[block]:
            live[block] = new
            for p in preds[block]:
                if p not in queued:
                    queued.add(p)
                    work.append(p)
    return live


def _is_const(v: Value, defs: dict[Value, Op]) -> bool:
    op = defs.get(v)
    return op is not None and op.opcode is Opcode.CONST


def _looked_through(used: list[Value], defs: dict[Value, Op]) -> set[Value]:
    """``used`` and the operands of their defining ops, ``LOOK_THROUGH`` ops deep."""
    depth: dict[Value, int] = {}
    frontier = [(v, 0) for v in used]
    while frontier:
        v, d = frontier.pop()
        if depth.get(v, LOOK_THROUGH + 1) <= d:
            continue
        depth[v] = d
        op = defs.get(v)
        if op is not None and d < LOOK_THROUGH:
            frontier.extend((x, d + 1) for x in op.operands)
    return set(depth)
