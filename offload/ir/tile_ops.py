"""Type rules and one-element meaning of the GPU tiling ops (``ops.TILE_OPS``).

They are made only by ``offload.opt.stage``; see ``offload.ir.ops`` for what they mean.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from offload.ir.core import Function, Op, Value
from offload.ir.ops import Opcode
from offload.ir.semantics import wrap_int
from offload.ir.types import BOOL, I32, INDEX, ArrayType, ScalarType


def _int_attr(op: Op, key: str, lo: int, hi: int | None = None) -> list[str]:
    v = op.attrs.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v < lo or (hi is not None and v > hi):
        span = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        return [f"{op.opcode} attribute {key} = {v!r} is not an int {span}"]
    return []


def _indexed_read(op: Op, n_extra: int) -> list[str]:
    """Rules for ``stage``/``tile_read``: an array, one index per axis, ``n_extra`` more."""
    types = [v.type for v in op.operands]
    if not types or not isinstance(types[0], ArrayType):
        return [f"{op.opcode} needs an array as its first operand"]
    arr = types[0]
    errs: list[str] = []
    if len(types) - 1 != arr.ndim + n_extra:
        errs.append(f"{op.opcode} of a rank-{arr.ndim} array has {len(types) - 1} operand(s)")
    errs += [
        f"{op.opcode} operand {k + 1} has type {t}, expected i64 or i32"
        for k, t in enumerate(types[1:])
        if t not in (INDEX, I32)
    ]
    return errs


def is_window(op: Op) -> bool:
    """Whether ``op`` is a window ``STAGE`` (it has an ``offset``; see ``offload.ir.ops``)."""
    return op.opcode is Opcode.STAGE and "offset" in op.attrs


def _window_operands(op: Op) -> list[str]:
    types = [v.type for v in op.operands]
    if len(types) != 3 or not isinstance(types[0], ArrayType) or types[0].ndim != 1:
        return ["a window stage takes a rank-1 array, an element index and a base"]
    return [
        f"stage operand {k + 1} has type {t}, expected i64 or i32"
        for k, t in enumerate(types[1:])
        if t not in (INDEX, I32)
    ]


def tile_op_errors(op: Op) -> list[str]:
    """What is wrong with a tiling op's operands, result and attributes (empty if fine)."""
    rt = op.result.type
    if op.opcode is Opcode.LANE:
        errs = _int_attr(op, "axis", 0, 1)
        if op.operands:
            errs.append("lane takes no operands")
        if rt not in (INDEX, I32):
            errs.append(f"lane result has type {rt}, expected i64 or i32")
        return errs
    if op.opcode is Opcode.BARRIER:
        errs = ["barrier takes no operands"] if op.operands else []
        return errs + ([] if rt == BOOL else [f"barrier result has type {rt}, expected bool"])
    if op.opcode is Opcode.STAGE:
        errs = _int_attr(op, "slot", 0) + _int_attr(op, "tile", 1)
        if is_window(op):
            errs += _int_attr(op, "offset", 0) + _window_operands(op)
        else:
            errs += _indexed_read(op, 0)
        return errs + ([] if rt == BOOL else [f"stage result has type {rt}, expected bool"])
    assert op.opcode is Opcode.TILE_READ
    errs = _indexed_read(op, 1) + _int_attr(op, "slot", 0) + _int_attr(op, "along", -1, 1)
    arr = op.operands[0].type if op.operands else None
    if isinstance(arr, ArrayType) and rt != arr.elem:
        errs.append(f"tile_read result has type {rt}, expected the element type {arr.elem}")
    return errs


def eval_tile_op(
    op: Op, env: dict[Value, Any], load: Callable[[Op, Any, tuple[int, ...]], Any]
) -> Any:
    """The op's value for one element (``load(op, array, index)`` reads and bounds-checks)."""
    if op.opcode is Opcode.LANE:
        rt = op.result.type
        assert isinstance(rt, ScalarType)
        return rt.dtype.type(0)
    if op.opcode is Opcode.BARRIER:
        return np.bool_(True)
    arr = env[op.operands[0]]
    if is_window(op):  # at offset 0: the element's own read a[p + base]; else no read
        if op.attrs["offset"]:
            return np.bool_(True)
        t = op.operands[2].type
        assert isinstance(t, ScalarType)
        at = int(env[op.operands[1]]) + int(env[op.operands[2]])
        load(op, arr, (wrap_int(at, t.bits, signed=True),))  # as the element's add wraps
        return np.bool_(True)
    n = arr.ndim
    idx = tuple(int(env[v]) for v in op.operands[1 : 1 + n])
    value = load(op, arr, idx)  # a STAGE's read must be in bounds too
    return np.bool_(True) if op.opcode is Opcode.STAGE else value


def tile_of(fn: Function) -> int | None:
    """The thread-tile edge of a function with tiling ops, ``None`` for any other."""
    for op in fn.ops():
        if op.opcode is Opcode.STAGE:
            tile = op.attrs["tile"]
            assert isinstance(tile, int)
            return tile
    return None


def tile_slots(fn: Function) -> dict[int, ScalarType]:
    """Slot number -> element type of its shared-memory tile."""
    out: dict[int, ScalarType] = {}
    for op in fn.ops():
        if op.opcode is Opcode.STAGE:
            arr = op.operands[0].type
            assert isinstance(arr, ArrayType)
            out[int(op.attrs["slot"])] = arr.elem
    return dict(sorted(out.items()))


def window_slots(fn: Function) -> frozenset[int]:
    """The slots staged as windows (``2 * tile`` elements each in a rank-1 kernel)."""
    return frozenset(int(op.attrs["slot"]) for op in fn.ops() if is_window(op))
