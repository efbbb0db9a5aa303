"""The typed SSA IR: the contract between the frontend, the optimiser and the backends."""

from offload.ir.builder import Builder
from offload.ir.core import Block, Branch, Capture, Function, Jump, Op, Return, Terminator, Value
from offload.ir.ops import Opcode
from offload.ir.printer import print_function
from offload.ir.types import ArrayType, ScalarType, Type

__all__ = [
    "ArrayType",
    "Block",
    "Branch",
    "Builder",
    "Capture",
    "Function",
    "Jump",
    "Op",
    "Opcode",
    "Return",
    "ScalarType",
    "Terminator",
    "Type",
    "Value",
    "print_function",
]
