"""Common subexpression elimination / global value numbering (pass ``cse``).

A walk over the dominator tree with a scoped table of ``(opcode, operands, attrs, type)``
keys: an op equal to one in a dominating position is replaced by it. Every op is pure
(``LOAD`` too: captured arrays are read-only), so any two equal ops compute one value.
Commutative ops key on their operands in a canonical order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from offload.ir.cfg import dominator_tree
from offload.ir.core import Block, Function, Op, Value
from offload.ir.ops import LOCAL_OPS, commutes
from offload.ir.types import ScalarType
from offload.opt.base import FunctionPass
from offload.opt.util import remove_unreachable, replace_uses, resolve


def _attr_key(value: Any) -> Any:
    # 0.0 == -0.0 and nan != nan in Python: key floats by their exact text instead.
    if isinstance(value, float):
        return ("float", math.copysign(1.0, value), repr(value))
    return (type(value).__name__, value)


def _float_operands(op: Op) -> bool:
    return any(isinstance(v.type, ScalarType) and v.type.is_float for v in op.operands)


def op_key(op: Op, number: dict[Value, int]) -> tuple[Any, ...]:
    """The value-numbering key of ``op`` given a numbering of its operands."""
    operands = [number.get(v, id(v)) for v in op.operands]
    if commutes(op.opcode, _float_operands(op)):
        operands.sort()
    attrs = tuple(sorted((k, _attr_key(v)) for k, v in op.attrs.items()))
    return (op.opcode, tuple(operands), attrs, str(op.result.type))


@dataclass(frozen=True)
class CommonSubexpressions(FunctionPass):
    """Dominator-based value numbering: reuse the dominating copy of an equal op."""

    name = "cse"

    def rewrite(self, fn: Function) -> Function:
        remove_unreachable(fn)
        children = dominator_tree(fn)
        number: dict[Value, int] = {}
        for k, block in enumerate(fn.blocks):
            for j, arg in enumerate(block.args):
                number[arg] = -(k * 1000 + j + 1)
        mapping: dict[Value, Value] = {}
        counter = 0
        # One table over the dominator tree, walked depth-first: a block's entries are
        # removed when its subtree is done (a chain of per-block tables made each lookup
        # cost the depth of the tree: quadratic for long chains of blocks, issue 19).
        table: dict[tuple[Any, ...], Value] = {}
        stack: list[tuple[Block, list[tuple[Any, ...]] | None]] = [(fn.entry, None)]
        while stack:
            block, added = stack.pop()
            if added is not None:  # leaving the block's subtree
                for key in added:
                    del table[key]
                continue
            mine: list[tuple[Any, ...]] = []
            stack.append((block, mine))
            kept = []
            for op in block.ops:
                op.operands = [resolve(mapping, v) for v in op.operands]
                if op.opcode in LOCAL_OPS:  # local-array state: never merged
                    counter += 1
                    number[op.result] = counter
                    kept.append(op)
                    continue
                key = op_key(op, number)
                found = table.get(key)
                if found is not None:
                    mapping[op.result] = found
                    continue
                table[key] = op.result
                mine.append(key)
                counter += 1
                number[op.result] = counter
                kept.append(op)
            block.ops = kept
            for child in reversed(children.get(block, [])):
                stack.append((child, None))
        replace_uses(fn, mapping)
        return fn
