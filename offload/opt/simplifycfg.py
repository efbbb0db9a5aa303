"""CFG simplification (pass ``simplifycfg``).

* a branch on a constant becomes a jump; a branch whose two edges go to one block becomes a
  jump (differing arguments become selects on the condition: all are already evaluated);
* an empty block that only jumps on is bypassed (its predecessors jump to its target,
  with its arguments substituted);
* a block reached by a jump from its only predecessor is merged into that predecessor;
* unreachable blocks are removed.
"""

from __future__ import annotations

from dataclasses import dataclass

from offload.ir.cfg import predecessors
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


def _used_elsewhere(fn: Function, block: Block) -> bool:
    args = set(block.args)
    for other in fn.blocks:
        uses = [v for op in other.ops for v in op.operands]
        t = other.terminator
        if other is not block:
            if isinstance(t, Jump):
                uses += t.args
            elif isinstance(t, Branch):
                uses += [t.cond, *t.then_args, *t.else_args]
            elif t is not None:
                uses += t.values
        if any(v in args for v in uses):
            return True
    return False


def bypass_forwarders(fn: Function) -> bool:
    """Bypass blocks with no ops whose terminator is a jump to another block."""
    preds = predecessors(fn)
    for block in fn.blocks[1:]:
        t = block.terminator
        if block.ops or not isinstance(t, Jump) or t.target is block:
            continue
        # Its arguments may be used directly in blocks it dominates (the target, a loop
        # exit...): bypass it only if nothing but its own jump uses them.
        if t.target is fn.entry or (block.args and _used_elsewhere(fn, block)):
            continue
        for pred in dict.fromkeys(preds[block]):
            if pred is block:
                continue
            _retarget(pred, block, t.target, {})
        remove_unreachable(fn)
        return True
    return False


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
