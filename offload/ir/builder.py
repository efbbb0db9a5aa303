"""A builder that appends ops to a current block and infers result types.

Operands must already have the types an op requires (the frontend inserts casts); the
verifier checks that. The builder only computes the result type.
"""

from __future__ import annotations

from typing import Any

from offload.diagnostics import Span
from offload.ir.core import Block, Branch, Capture, Function, Jump, Op, Return, Value
from offload.ir.ops import COMPARE, MATH_PREDICATES, Opcode
from offload.ir.types import BOOL, INDEX, ArrayType, LocalType, ScalarType, Type


class Builder:
    """Builds one ``Function``; ``block`` is the insertion point."""

    def __init__(
        self,
        name: str,
        n_index: int,
        captures: list[Capture] | None = None,
        span: Span | None = None,
        index_hints: list[str] | None = None,
    ) -> None:
        hints = index_hints or [f"i{k}" for k in range(n_index)]
        entry = Block(hint="entry")
        entry.args = [Value(INDEX, hints[k]) for k in range(n_index)]
        self.function = Function(name, [entry], n_index, [], [], span)
        self.block: Block = entry
        self.span: Span | None = None
        """Span attached to ops built from now on (the frontend sets it per AST node)."""
        for cap in captures or []:
            self.add_capture(cap)

    # -- structure -------------------------------------------------------------------

    def add_capture(self, capture: Capture, hint: str | None = None) -> Value:
        """Append a capture parameter to the entry block and return its value."""
        value = Value(capture.type, hint or _sanitize(capture.name))
        self.function.entry.args.append(value)
        self.function.captures.append(capture)
        return value

    def new_block(self, arg_types: list[Type] | None = None, hint: str | None = None) -> Block:
        """A new block (appended to the function) with fresh arguments."""
        block = Block(args=[Value(t) for t in arg_types or []], hint=hint)
        self.function.blocks.append(block)
        return block

    def position_at_end(self, block: Block) -> None:
        self.block = block

    # -- terminators -----------------------------------------------------------------

    def jump(self, target: Block, args: list[Value] | None = None) -> None:
        self.block.terminator = Jump(target, list(args or []), self.span)

    def branch(
        self,
        cond: Value,
        then_target: Block,
        else_target: Block,
        then_args: list[Value] | None = None,
        else_args: list[Value] | None = None,
        *,
        uniform: bool = False,
    ) -> None:
        self.block.terminator = Branch(
            cond,
            then_target,
            list(then_args or []),
            else_target,
            list(else_args or []),
            self.span,
            uniform,
        )

    def ret(self, values: list[Value]) -> None:
        self.block.terminator = Return(list(values), self.span)

    # -- ops -------------------------------------------------------------------------

    def op(
        self,
        opcode: Opcode,
        operands: list[Value],
        result_type: Type,
        attrs: dict[str, Any] | None = None,
        hint: str | None = None,
    ) -> Value:
        """Append ``opcode(operands)`` with an explicit result type; return the result."""
        result = Value(result_type, hint)
        self.block.ops.append(Op(opcode, list(operands), result, dict(attrs or {}), self.span))
        return result

    def const(self, value: bool | int | float, type: ScalarType) -> Value:
        if type.is_bool:
            value = bool(value)
        elif type.is_int:
            value = int(value)
        else:
            value = float(value)
        return self.op(Opcode.CONST, [], type, {"value": value})

    def binary(self, opcode: Opcode, lhs: Value, rhs: Value) -> Value:
        """Arithmetic, bitwise or comparison op on two operands of one type."""
        result_type = BOOL if opcode in COMPARE else lhs.type
        return self.op(opcode, [lhs, rhs], result_type)

    def unary(self, opcode: Opcode, operand: Value) -> Value:
        return self.op(opcode, [operand], operand.type)

    def select(self, cond: Value, if_true: Value, if_false: Value) -> Value:
        return self.op(Opcode.SELECT, [cond, if_true, if_false], if_true.type)

    def cast(self, value: Value, to: ScalarType) -> Value:
        """Convert ``value`` to ``to``; returns ``value`` itself if it already has that type."""
        if value.type == to:
            return value
        return self.op(Opcode.CAST, [value], to)

    def math(self, fn: str, operands: list[Value]) -> Value:
        result_type = BOOL if fn in MATH_PREDICATES else operands[0].type
        return self.op(Opcode.MATH, operands, result_type, {"fn": fn})

    def load(self, array: Value, indices: list[Value]) -> Value:
        assert isinstance(array.type, ArrayType)
        return self.op(Opcode.LOAD, [array, *indices], array.type.elem)

    def local(self, t: LocalType) -> Value:
        """A new local array (contents undefined)."""
        return self.op(Opcode.LOCAL, [], t)

    def local_load(self, array: Value, indices: list[Value]) -> Value:
        assert isinstance(array.type, LocalType)
        return self.op(Opcode.LOCAL_LOAD, [array, *indices], array.type.elem)

    def local_store(self, array: Value, indices: list[Value], value: Value) -> Value:
        return self.op(Opcode.LOCAL_STORE, [array, *indices, value], BOOL)

    def local_fill(self, array: Value, value: Value) -> Value:
        return self.op(Opcode.LOCAL_FILL, [array, value], BOOL)

    def shape(self, array: Value, axis: int) -> Value:
        return self.op(Opcode.SHAPE, [array], INDEX, {"axis": axis})


def _sanitize(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out or "v"
