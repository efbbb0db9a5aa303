"""Copy propagation (pass ``copyprop``): remove values that are only another value.

* a block argument whose incoming values (ignoring the argument itself, on loop edges) are
  all one value ``v`` is ``v`` (``v`` then dominates the block: it reaches every predecessor);
* ``select(c, a, a)`` is ``a``; a cast to the operand's own type is the operand.
"""

from __future__ import annotations

from dataclasses import dataclass

from offload.ir.cfg import predecessors
from offload.ir.core import Function, Value
from offload.ir.ops import Opcode
from offload.opt.base import FunctionPass
from offload.opt.util import drop_block_args, edge_args, remove_unreachable, replace_uses


def _trivial_args(fn: Function) -> bool:
    preds = predecessors(fn)
    for block in fn.blocks[1:]:
        if not block.args:
            continue
        incoming: list[list[Value]] = []
        for pred in dict.fromkeys(preds[block]):
            incoming.extend(edge_args(pred, block))
        mapping: dict[Value, Value] = {}
        keep: list[bool] = []
        for k, arg in enumerate(block.args):
            sources = {id(vals[k]): vals[k] for vals in incoming if vals[k] is not arg}
            if len(sources) == 1:
                mapping[arg] = next(iter(sources.values()))
                keep.append(False)
            else:
                keep.append(True)
        if mapping:
            drop_block_args(fn, block, keep)
            replace_uses(fn, mapping)
            return True
    return False


def _trivial_ops(fn: Function) -> bool:
    mapping: dict[Value, Value] = {}
    for block in fn.blocks:
        kept = []
        for op in block.ops:
            if op.opcode is Opcode.SELECT and op.operands[1] is op.operands[2]:
                mapping[op.result] = op.operands[1]
            elif op.opcode is Opcode.CAST and op.operands[0].type == op.result.type:
                mapping[op.result] = op.operands[0]
            else:
                kept.append(op)
        block.ops = kept
    replace_uses(fn, mapping)
    return bool(mapping)


@dataclass(frozen=True)
class CopyPropagation(FunctionPass):
    """Replace trivial block arguments, equal-armed selects and no-op casts by their value."""

    name = "copyprop"

    def rewrite(self, fn: Function) -> Function:
        remove_unreachable(fn)
        while _trivial_args(fn) or _trivial_ops(fn):
            pass
        return fn
