"""Type rules and one-element meaning of the GPU group ops (``ops.GROUP_OPS``).

They are made only by ``offload.opt.cooperate``; see ``offload.ir.ops`` for what they mean.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from offload.ir.core import Function, Op, Value
from offload.ir.ops import Opcode
from offload.ir.types import I32, INDEX, ScalarType

GROUP_TYPES = (INDEX, I32)
"""The types of ``GROUP_LANE``, ``GROUP_SIZE`` and ``SHFL``'s lane operand."""


def group_op_errors(op: Op) -> list[str]:
    """What is wrong with a group op's operands, result and attributes (empty if fine)."""
    rt = op.result.type
    g = op.attrs.get("group")
    errs = [] if type(g) is int and g >= 1 else [f"{op.opcode} needs an int group >= 1"]
    if op.opcode is Opcode.SHFL:
        if len(op.operands) != 2:
            return [*errs, "shfl takes a value and a lane"]
        x, lane = (v.type for v in op.operands)
        if not isinstance(x, ScalarType) or rt != x:
            errs.append(f"shfl result has type {rt}, expected its value's type {x}")
        if lane not in GROUP_TYPES:
            errs.append(f"shfl lane has type {lane}, expected i64 or i32")
        return errs
    if op.operands:
        errs.append(f"{op.opcode} takes no operands")
    if rt not in GROUP_TYPES:
        errs.append(f"{op.opcode} result has type {rt}, expected i64 or i32")
    return errs


def eval_group_op(op: Op, env: dict[Value, Any]) -> Any:
    """The op's value for one element: a group of one lane."""
    if op.opcode is Opcode.SHFL:
        if int(env[op.operands[1]]) != 0:
            raise ValueError("shfl from a lane other than 0 in a group of one")
        return env[op.operands[0]]
    rt = op.result.type
    assert isinstance(rt, ScalarType)
    return rt.dtype.type(1 if op.opcode is Opcode.GROUP_SIZE else 0)


def group_of(fn: Function) -> int:
    """The group size of a function with group ops (``offload.opt.cooperate``), else 1."""
    for op in fn.ops():
        if op.opcode is Opcode.GROUP_SIZE:
            g = op.attrs["group"]
            assert isinstance(g, int)
            return g
    return 1


def group_types(fn: Function) -> list[np.dtype[Any]]:
    """The dtypes ``SHFL`` moves in ``fn``, in first-use order."""
    out: dict[np.dtype[Any], None] = {}
    for op in fn.ops():
        if op.opcode is Opcode.SHFL:
            t = op.result.type
            assert isinstance(t, ScalarType)
            out[t.dtype] = None
    return list(out)
