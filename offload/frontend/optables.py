"""Operator tables of the lowering: Python AST operators -> operator names -> IR opcodes."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from offload.ir.ops import Opcode

BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "truediv",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
    ast.Pow: "pow",
    ast.LShift: "lshift",
    ast.RShift: "rshift",
    ast.BitAnd: "and",
    ast.BitOr: "or",
    ast.BitXor: "xor",
}
SYMBOL = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
    "pow": "**", "lshift": "<<", "rshift": ">>", "and": "&", "or": "|", "xor": "^",
}  # fmt: skip
OPCODES: dict[str, Opcode] = {
    "add": Opcode.ADD,
    "sub": Opcode.SUB,
    "mul": Opcode.MUL,
    "truediv": Opcode.TRUEDIV,
    "floordiv": Opcode.FLOORDIV,
    "mod": Opcode.FLOORMOD,
    "pow": Opcode.POW,
    "lshift": Opcode.SHL,
    "rshift": Opcode.SHR,
    "and": Opcode.AND,
    "or": Opcode.OR,
    "xor": Opcode.XOR,
}
NONNEG_KEEPING = frozenset({"add", "mul", "floordiv", "mod", "and"})
COMPARE: dict[type[ast.cmpop], Opcode] = {
    ast.Eq: Opcode.EQ,
    ast.NotEq: Opcode.NE,
    ast.Lt: Opcode.LT,
    ast.LtE: Opcode.LE,
    ast.Gt: Opcode.GT,
    ast.GtE: Opcode.GE,
}
PY_COMPARE = {
    Opcode.EQ: operator.eq,
    Opcode.NE: operator.ne,
    Opcode.LT: operator.lt,
    Opcode.LE: operator.le,
    Opcode.GT: operator.gt,
    Opcode.GE: operator.ge,
}
PY_UNARY: dict[str, Callable[[Any], Any]] = {
    "neg": operator.neg,
    "pos": operator.pos,
    "invert": operator.invert,
}
