"""Constant captured arrays (pass ``consts``): fold what a function reads of an array whose
contents it is specialised on (``Capture.value``: a small array frozen with
``offload.use``, see ``offload.driver``).

* ``SHAPE(a)`` is the constant extent;
* ``LOAD(a, i0, .., ik)`` at constant indices inside the array is the constant element.

A load at an index that is not constant stays (a GPU kernel reads it from the constant
bank, ``offload.ptx.hooks``); one at a constant index outside the array also stays, so that
a bounds-checked kernel still reports it.
"""

from __future__ import annotations

from dataclasses import dataclass

from offload.ir.core import Function, Op, Value
from offload.ir.ops import Opcode
from offload.ir.types import ScalarType
from offload.opt.base import FunctionPass
from offload.opt.rewrite import python_scalar
from offload.opt.util import const_value, definitions


def _folded(op: Op, fn: Function, defs: dict[Value, Op]) -> object | None:
    """The constant that ``op`` reads of a constant capture, or ``None``."""
    if op.opcode not in (Opcode.SHAPE, Opcode.LOAD):
        return None
    params = fn.capture_params
    source = op.operands[0]
    k = next((j for j, p in enumerate(params) if p is source), None)
    value = fn.captures[k].value if k is not None else None
    if value is None:
        return None
    if op.opcode is Opcode.SHAPE:
        extent: int = value.shape[op.attrs["axis"]]
        return extent
    index: list[int] = []
    for v, n in zip(op.operands[1:], value.shape, strict=True):
        i = const_value(defs, v)
        if type(i) is not int or not 0 <= i < n:
            return None
        index.append(i)
    held: object = value.array()[tuple(index)]
    return held


@dataclass(frozen=True)
class ConstantCaptures(FunctionPass):
    """Fold shapes and constant-index loads of the captures ``Capture.value`` holds."""

    name = "consts"

    def rewrite(self, fn: Function) -> Function:
        if all(c.value is None for c in fn.captures):
            return fn
        defs = definitions(fn)
        for op in fn.ops():
            held = _folded(op, fn, defs)
            if held is None:
                continue
            t = op.result.type
            assert isinstance(t, ScalarType)
            op.opcode, op.operands = Opcode.CONST, []
            op.attrs = {"value": python_scalar(held, t)}
        return fn
