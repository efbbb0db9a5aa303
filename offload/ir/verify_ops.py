"""Op typing: what each opcode accepts of its operand and result types and attributes.

The per-op half of the IR verifier (``offload.ir.verifier`` checks structure, the
signature and SSA, and reports what ``op_type_errors`` finds for each op).
"""

from __future__ import annotations

from offload.ir.core import Op
from offload.ir.ops import (
    BINARY_ARITH,
    COMPARE,
    LOCAL_OPS,
    MATH_FUNCTIONS,
    MATH_PREDICATES,
    TILE_OPS,
    UNARY,
    Opcode,
)
from offload.ir.tile_ops import tile_op_errors
from offload.ir.types import BOOL, I32, INDEX, ArrayType, LocalType, ScalarType, Type

# Which result kinds (NumPy dtype kinds: b bool, i/u int, f float) each op accepts.
_INT = "iu"
_BINARY_KINDS: dict[Opcode, str] = {
    Opcode.ADD: "iuf",
    Opcode.SUB: "iuf",
    Opcode.MUL: "iuf",
    Opcode.TRUEDIV: "f",
    Opcode.FLOORDIV: "iuf",
    Opcode.FLOORMOD: "iuf",
    Opcode.DIV: _INT,
    Opcode.REM: _INT,
    Opcode.POW: "iuf",
    Opcode.MIN: "biuf",
    Opcode.MAX: "biuf",
    Opcode.AND: "biu",
    Opcode.OR: "biu",
    Opcode.XOR: "biu",
    Opcode.SHL: _INT,
    Opcode.SHR: _INT,
}
_UNARY_KINDS: dict[Opcode, str] = {
    Opcode.NEG: "iuf",
    Opcode.INVERT: _INT,
    Opcode.NOT: "b",
    Opcode.ABS: "iuf",
}
_KIND_NAMES = {"b": "bool", "i": "signed int", "u": "unsigned int", "f": "float"}


def _kinds(kinds: str) -> str:
    return " or ".join(_KIND_NAMES[k] for k in kinds)


def op_type_errors(op: Op) -> list[str]:
    """What is wrong with ``op``'s operand/result types and attributes (empty if fine)."""
    opcode, operands, rt = op.opcode, op.operands, op.result.type
    types = [v.type for v in operands]
    errs: list[str] = []

    def arity(n: int) -> bool:
        if len(operands) != n:
            errs.append(f"{opcode} takes {n} operand(s), found {len(operands)}")
            return False
        return True

    if opcode in TILE_OPS:
        return tile_op_errors(op)
    if opcode in LOCAL_OPS:
        return _local_errors(op)
    if opcode is Opcode.LOAD:
        if not operands or not isinstance(types[0], ArrayType):
            return [*errs, "load needs an array as its first operand"]
        arr = types[0]
        if len(operands) - 1 != arr.ndim:
            errs.append(f"load of a rank-{arr.ndim} array has {len(operands) - 1} index(es)")
        # i32 indices come only from offload.opt.narrow (the GPU's 32-bit kernel).
        errs += [
            f"load index {k} has type {t}, expected i64"  # (or the narrow pass's i32)
            for k, t in enumerate(types[1:])
            if t not in (INDEX, I32)
        ]
        if rt != arr.elem:
            errs.append(f"load result has type {rt}, expected the element type {arr.elem}")
        return errs
    if opcode is Opcode.SHAPE:
        if not arity(1):
            return errs
        if not isinstance(types[0], ArrayType):
            return [f"shape needs an array operand, found {types[0]}"]
        axis = op.attrs.get("axis")
        if not isinstance(axis, int) or isinstance(axis, bool) or not 0 <= axis < types[0].ndim:
            errs.append(f"shape axis {axis!r} is not in [0, {types[0].ndim})")
        if rt != INDEX:
            errs.append(f"shape result has type {rt}, expected i64")
        return errs
    if not isinstance(rt, ScalarType):
        return [f"result has non-scalar type {rt}"]
    for k, t in enumerate(types):
        if not isinstance(t, ScalarType):
            errs.append(
                f"operand {k} has array type {t}; only load, shape and the local-array ops "
                "take arrays"
            )
    if errs:
        return errs
    kind = rt.dtype.kind
    if opcode is Opcode.CONST:
        arity(0)
        errs += _const_errors(op.attrs.get("value"), rt, "value" in op.attrs)
    elif opcode in BINARY_ARITH:
        if arity(2):
            errs += _same_type(types, rt, "operand")
        if kind not in _BINARY_KINDS[opcode]:
            errs.append(f"{opcode} is defined on {_kinds(_BINARY_KINDS[opcode])}, not {rt}")
    elif opcode in UNARY:
        if arity(1):
            errs += _same_type(types, rt, "operand")
        if kind not in _UNARY_KINDS[opcode]:
            errs.append(f"{opcode} is defined on {_kinds(_UNARY_KINDS[opcode])}, not {rt}")
    elif opcode in COMPARE:
        if arity(2) and types[0] != types[1]:
            errs.append(f"compared operands have different types {types[0]} and {types[1]}")
        if rt != BOOL:
            errs.append(f"comparison result has type {rt}, expected bool")
    elif opcode is Opcode.SELECT:
        if arity(3):
            if types[0] != BOOL:
                errs.append(f"select condition has type {types[0]}, expected bool")
            errs += _same_type(types[1:], rt, "select arm")
    elif opcode is Opcode.CAST:
        arity(1)
    elif opcode is Opcode.MATH:
        errs += _math_errors(op, types, rt)
    return errs


def _same_type(types: list[Type], rt: ScalarType, what: str) -> list[str]:
    return [f"{what} {k} has type {t}, expected {rt}" for k, t in enumerate(types) if t != rt]


def _const_errors(value: object, rt: ScalarType, present: bool) -> list[str]:
    if not present:
        return ["const has no 'value' attribute"]
    if rt.is_bool:
        ok = isinstance(value, bool)
    elif rt.is_int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok:
            assert isinstance(value, int)
            lo = -(1 << (rt.bits - 1)) if rt.is_signed else 0
            hi = (1 << (rt.bits - 1 if rt.is_signed else rt.bits)) - 1
            if not lo <= value <= hi:
                return [f"const {value} is out of the range of {rt} [{lo}, {hi}]"]
    else:
        ok = isinstance(value, float)
    if not ok:
        return [f"const value {value!r} ({type(value).__name__}) does not match type {rt}"]
    return []


def _math_errors(op: Op, types: list[Type], rt: ScalarType) -> list[str]:
    name = op.attrs.get("fn")
    if not isinstance(name, str) or name not in MATH_FUNCTIONS:
        return [f"unknown math function {name!r}"]
    want = MATH_FUNCTIONS[name]
    if len(types) != want:
        return [f"math {name} takes {want} operand(s), found {len(types)}"]
    errs: list[str] = []
    first = types[0]
    if not isinstance(first, ScalarType) or not first.is_float:
        errs.append(f"math {name} needs float operands, found {first}")
    errs += [
        f"math {name} operand {k} has type {t}, expected {first}"
        for k, t in enumerate(types)
        if t != first
    ]
    expected = BOOL if name in MATH_PREDICATES else first
    if rt != expected:
        errs.append(f"math {name} result has type {rt}, expected {expected}")
    return errs


MAX_LOCAL_ELEMENTS = 1024
"""The most elements a local array may have (the frontend reports a larger one)."""


def _local_errors(op: Op) -> list[str]:
    """``LOCAL``, ``LOCAL_LOAD``, ``LOCAL_STORE``, ``LOCAL_FILL`` (see ``ops.py``)."""
    opcode, operands, rt = op.opcode, op.operands, op.result.type
    if opcode is Opcode.LOCAL:
        if operands:
            return [f"local takes no operands, found {len(operands)}"]
        if not isinstance(rt, LocalType):
            return [f"local result has type {rt}, expected local<elem,shape>"]
        if not 1 <= len(rt.shape) <= 2 or min(rt.shape) < 1 or rt.size > MAX_LOCAL_ELEMENTS:
            return [f"local shape {rt.shape} is not 1 or 2 extents >= 1 of at most "
                    f"{MAX_LOCAL_ELEMENTS} elements"]  # fmt: skip
        return []
    if not operands or not isinstance(operands[0].type, LocalType):
        return [f"{opcode} needs a local array as its first operand"]
    lt = operands[0].type
    errs: list[str] = []
    if opcode is Opcode.LOCAL_FILL:
        index: list[Type] = []
        stored: Type | None = operands[1].type if len(operands) == 2 else None
        if len(operands) != 2:
            errs.append(f"local_fill takes 2 operands, found {len(operands)}")
    else:
        rank = len(lt.shape)
        store = opcode is Opcode.LOCAL_STORE
        want = 1 + rank + int(store)
        if len(operands) != want:
            return [f"{opcode} of a rank-{rank} local array takes {want} operands, found "
                    f"{len(operands)}"]  # fmt: skip
        index = [v.type for v in operands[1 : 1 + rank]]
        stored = operands[-1].type if store else None
    errs += [
        f"{opcode} index {k} has type {t}, expected i64"
        for k, t in enumerate(index)
        if t not in (INDEX, I32)
    ]
    if stored is not None and stored != lt.elem:
        errs.append(f"{opcode} stores a {stored}, expected the element type {lt.elem}")
    want_rt = lt.elem if opcode is Opcode.LOCAL_LOAD else BOOL
    if rt != want_rt:
        errs.append(f"{opcode} result has type {rt}, expected {want_rt}")
    return errs
