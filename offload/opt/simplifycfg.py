"""CFG simplification (pass ``simplifycfg``).

* a branch on a constant becomes a jump; a branch whose two edges go to one block becomes a
  jump (differing arguments become selects on the condition: all are already evaluated);
* an empty block that only jumps on is bypassed (its predecessors jump to its target,
  with its arguments substituted);
* a block reached by a jump from its only predecessor is merged into that predecessor;
* unreachable blocks are removed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from offload.ir.cfg import predecessors, reverse_postorder
from offload.ir.core import Block, Branch, Function, Jump, Op, Value
from offload.ir.ops import Opcode
from offload.ir.types import ArrayType
from offload.opt.base import FunctionPass
from offload.opt.util import definitions, merge_chains, remove_unreachable


def fold_branches(fn: Function) -> bool:
    """Turn branches on constants and branches to one block into jumps."""
    defs = definitions(fn)
    changed = False
    for block in fn.blocks:
        t = block.terminator
        if not isinstance(t, Branch):
            continue
        cdef = defs.get(t.cond)
        if cdef is not None and cdef.opcode is Opcode.CONST:
            taken = cdef.attrs["value"]
            target, args = (t.then_target, t.then_args) if taken else (t.else_target, t.else_args)
            block.terminator = Jump(target, list(args), t.span)
            changed = True
        elif t.then_target is t.else_target and not any(
            a is not b and isinstance(a.type, ArrayType)
            for a, b in zip(t.then_args, t.else_args, strict=True)
        ):
            merged: list[Value] = []
            for a, b in zip(t.then_args, t.else_args, strict=True):
                if a is b:
                    merged.append(a)
                    continue
                sel = Value(a.type)
                block.ops.append(Op(Opcode.SELECT, [t.cond, a, b], sel, {}, t.span))
                merged.append(sel)
            block.terminator = Jump(t.then_target, merged, t.span)
            changed = True
    if changed:
        remove_unreachable(fn)
    return changed


def _retarget(pred: Block, old: Block, new: Block, substitute: dict[Value, Value]) -> None:
    """Make ``pred``'s edges into ``old`` go to ``new`` with ``old``'s jump arguments."""
    t = pred.terminator
    old_jump = old.terminator
    assert isinstance(old_jump, Jump)

    def args_for(edge_args: list[Value]) -> list[Value]:
        env = dict(zip(old.args, edge_args, strict=True))
        return [env.get(a, substitute.get(a, a)) for a in old_jump.args]

    if isinstance(t, Jump) and t.target is old:
        pred.terminator = Jump(new, args_for(t.args), t.span)
    elif isinstance(t, Branch):
        if t.then_target is old:
            t.then_target, t.then_args = new, args_for(t.then_args)
        if t.else_target is old:
            t.else_target, t.else_args = new, args_for(t.else_args)


def _uses(fn: Function) -> Counter[Value]:
    """How many times each value is used (op operands and terminator operands)."""
    count: Counter[Value] = Counter()
    for block in fn.blocks:
        for op in block.ops:
            count.update(op.operands)
        t = block.terminator
        if isinstance(t, Jump):
            count.update(t.args)
        elif isinstance(t, Branch):
            count.update([t.cond, *t.then_args, *t.else_args])
        elif t is not None:
            count.update(t.values)
    return count


def bypass_forwarders(fn: Function) -> bool:
    """Bypass blocks with no ops whose terminator is a jump to another block, all in one
    sweep (one at a time, each with its own analysis of the whole function, was quadratic
    in the number of such blocks: issue 19)."""
    preds = predecessors(fn)
    uses = _uses(fn)
    changed = False
    # Later blocks first: a chain of forwarders (the joins of an elif ladder) then moves
    # each edge once, straight to the chain's end, not once per link.
    for block in reversed(reverse_postorder(fn)):
        t = block.terminator
        if block is fn.entry:
            continue
        if block.ops or not isinstance(t, Jump) or t.target is block or not preds[block]:
            continue
        # Its arguments may be used directly in blocks it dominates (the target, a loop
        # exit...): bypass it only if nothing but its own jump uses them. (Bypassing other
        # forwarders moves uses from one jump to others, never onto or off these.)
        own = Counter(t.args)
        if t.target is fn.entry or any(uses[a] > own[a] for a in block.args):
            continue
        for pred in dict.fromkeys(preds[block]):
            if pred is block:
                continue
            _retarget(pred, block, t.target, {})
            preds[t.target].extend(p for p in [pred] if p not in preds[t.target])
        preds[block] = []
        changed = True
    if changed:
        remove_unreachable(fn)
    return changed


def simplify(fn: Function) -> None:
    """Apply the simplifications in place until none applies (``fn`` must be the pass's own)."""
    remove_unreachable(fn)
    for _ in range(100):
        if not (fold_branches(fn) | bypass_forwarders(fn) | merge_chains(fn)):
            break


@dataclass(frozen=True)
class SimplifyCFG(FunctionPass):
    """Fold constant branches, bypass forwarding blocks, merge straight-line chains."""

    name = "simplifycfg"

    def rewrite(self, fn: Function) -> Function:
        simplify(fn)
        return fn
