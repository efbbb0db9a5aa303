"""Local arrays read and written at constant indices become scalars (pass ``scalarize``).

A small local array that the element function indexes only with constants (a 3-vector, a
3x3 matrix, a loop over it unrolled) needs no memory: each element is an SSA value. This
pass replaces such an array's ``LOCAL_LOAD``s by the value last stored (or filled) there,
and removes the array and its writes. It takes an array only when every access is in one
block, at an in-bounds constant index, and no write's result is used; then the accesses
run in block order, so "the value last stored" is the one the block's order gives. An
element read before any write (``np.empty``'s undefined contents) reads 0.

The GPU does not need it (LLVM's SROA does the same on ``cuda.local.array``); the CPU does:
numba's ``np.empty`` is a heap array that LLVM keeps in memory (the CPU backend runs it).
"""

from __future__ import annotations

from dataclasses import dataclass

from offload.ir.core import Block, Function, Op, Value
from offload.ir.ops import LOCAL_OPS, Opcode
from offload.ir.types import LocalType
from offload.opt.base import FunctionPass
from offload.opt.util import const_value, definitions, replace_uses


def _accesses(fn: Function) -> dict[Value, list[tuple[Block, Op]]]:
    """Each local array's accesses (loads, stores, fills), with their blocks."""
    out: dict[Value, list[tuple[Block, Op]]] = {}
    for block in fn.blocks:
        for op in block.ops:
            if op.opcode in LOCAL_OPS and op.opcode is not Opcode.LOCAL:
                out.setdefault(op.operands[0], []).append((block, op))
    return out


def _flat_index(op: Op, t: LocalType, defs: dict[Value, Op]) -> int | None:
    """The element ``op`` reads or writes (row-major), if its indices are in-bounds
    constants."""
    rank = len(t.shape)
    flat = 0
    for v, n in zip(op.operands[1 : 1 + rank], t.shape, strict=True):
        k = const_value(defs, v)
        if type(k) is not int or not 0 <= k < n:
            return None
        flat = flat * n + k
    return flat


@dataclass(frozen=True)
class ScalarizeLocalArrays(FunctionPass):
    """Replace constant-index local arrays accessed in one block by SSA values."""

    name = "scalarize"

    def rewrite(self, fn: Function) -> Function:
        defs = definitions(fn)
        used = {v for op in fn.ops() for v in op.operands if op.opcode not in LOCAL_OPS}
        used |= {v for op in fn.ops() for v in op.operands[1:] if op.opcode in LOCAL_OPS}
        mapping: dict[Value, Value] = {}
        removed: set[int] = set()
        zeros: list[tuple[Block, Op]] = []
        for arr, accesses in _accesses(fn).items():
            t = arr.type
            blocks = {id(b) for b, _ in accesses}
            if not isinstance(t, LocalType) or len(blocks) != 1:
                continue
            writes = [op for _, op in accesses if op.opcode is not Opcode.LOCAL_LOAD]
            if any(op.result in used for op in writes):
                continue
            flats: dict[int, int] = {}
            for _, op in accesses:
                if op.opcode is Opcode.LOCAL_FILL:
                    continue
                k = _flat_index(op, t, defs)
                if k is None:
                    break
                flats[id(op)] = k
            else:
                block = accesses[0][0]
                current: dict[int, Value] = {}
                fill: Value | None = None
                for op in block.ops:
                    if op.opcode not in LOCAL_OPS or not op.operands or op.operands[0] is not arr:
                        continue
                    removed.add(id(op))
                    if op.opcode is Opcode.LOCAL_FILL:
                        fill, current = op.operands[1], {}
                    elif op.opcode is Opcode.LOCAL_STORE:
                        current[flats[id(op)]] = op.operands[-1]
                    else:
                        value = current.get(flats[id(op)], fill)
                        if value is None:  # undefined contents: 0
                            zero = Op(Opcode.CONST, [], Value(t.elem), {"value": _zero(t)})
                            zeros.append((block, zero))
                            value = zero.result
                        mapping[op.result] = value
                defining = defs.get(arr)
                if defining is not None:
                    removed.add(id(defining))
        if not removed:
            return fn
        for block in fn.blocks:
            block.ops = [op for op in block.ops if id(op) not in removed]
        for block, zero in zeros:
            block.ops.insert(0, zero)
        replace_uses(fn, mapping)
        return fn


def _zero(t: LocalType) -> bool | int | float:
    if t.elem.is_bool:
        return False
    return 0 if t.elem.is_int else 0.0
