"""The IR: SSA values, ops, blocks with arguments, and functions.

* A ``Function`` is a CFG of ``Block``s; the first block is the entry and its arguments are
  the function's parameters: first ``n_index`` index parameters (``i64``), then captured
  arrays and captured scalars (``Function.captures`` names them).
* Blocks take arguments instead of phis (MLIR style); a terminator passes values to them.
* A function returns ``len(result_types)`` scalars (tuple results are flattened: a tuple
  return is several results, never a tuple value).
* Values are objects compared by identity; ``hint`` is only a printing hint.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from offload.diagnostics import Span
from offload.ir.ops import Opcode
from offload.ir.types import ScalarType, Type


class Value:
    """An SSA value: a block argument or an op's result."""

    __slots__ = ("hint", "type")

    def __init__(self, type: Type, hint: str | None = None) -> None:
        self.type: Type = type
        """The value's type."""
        self.hint: str | None = hint
        """A name for printing (a source variable name); not unique, not semantic."""

    def __repr__(self) -> str:
        return f"<Value {self.hint or ''}:{self.type} @{id(self):x}>"


@dataclass(eq=False)
class Op:
    """One instruction ``result = opcode(operands) {attrs}``."""

    opcode: Opcode
    operands: list[Value]
    result: Value
    """Every op has exactly one result."""
    attrs: dict[str, Any] = field(default_factory=dict[str, Any])
    """Opcode-specific constants: ``value`` (CONST), ``fn`` (MATH), ``axis`` (SHAPE)."""
    span: Span | None = None
    """Where in the user's source this op comes from (for diagnostics and line comments)."""


@dataclass(eq=False)
class Jump:
    """Unconditional branch passing ``args`` to ``target``'s arguments."""

    target: Block
    args: list[Value] = field(default_factory=list[Value])
    span: Span | None = None


@dataclass(eq=False)
class Branch:
    """Two-way branch on a ``bool`` value."""

    cond: Value
    then_target: Block
    then_args: list[Value]
    else_target: Block
    else_args: list[Value]
    span: Span | None = None
    uniform: bool = False
    """Most threads take the same arm (a stencil's interior test): kept as a branch --
    never merged into selects, which would run both arms' work on every element."""


@dataclass(eq=False)
class Return:
    """Return the function's results (one value per entry of ``result_types``)."""

    values: list[Value]
    span: Span | None = None


Terminator = Jump | Branch | Return


@dataclass(eq=False)
class Block:
    """A basic block: arguments, straight-line ops, one terminator."""

    args: list[Value] = field(default_factory=list[Value])
    ops: list[Op] = field(default_factory=list[Op])
    terminator: Terminator | None = None
    """``None`` only while a builder is still filling the block."""
    hint: str | None = None
    """A label hint for printing (``loop``, ``then``...)."""

    def successors(self) -> list[Block]:
        t = self.terminator
        if isinstance(t, Jump):
            return [t.target]
        if isinstance(t, Branch):
            return [t.then_target, t.else_target]
        return []


@dataclass(frozen=True)
class ConstArray:
    """The contents of a captured array that a kernel is specialised on (a small array
    frozen with ``offload.use``): its shape and its elements' bytes in C order."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    data: bytes

    @staticmethod
    def of(x: np.ndarray[Any, Any]) -> ConstArray:
        return ConstArray(tuple(x.shape), x.dtype, np.ascontiguousarray(x).tobytes())

    def array(self) -> np.ndarray[Any, Any]:
        """The contents as a read-only array of ``shape``."""
        return np.frombuffer(self.data, dtype=self.dtype).reshape(self.shape)

    def strides(self) -> tuple[int, ...]:
        """Element strides of the C-order layout."""
        out: list[int] = []
        step = 1
        for n in reversed(self.shape):
            out.append(step)
            step *= n
        return tuple(reversed(out))


@dataclass(eq=False)
class Capture:
    """What a non-index parameter stands for: a captured array or scalar of the user's code."""

    name: str
    """The source-level expression, e.g. ``a`` or ``self.weights`` (for messages)."""
    type: Type
    value: ConstArray | None = None
    """A captured array's contents where the function is specialised on them (its loads
    and shape may then be folded, and a GPU kernel holds them as constants); the array is
    still passed, and the driver checks on every call that it is the same."""


@dataclass(eq=False)
class Function:
    """An element function: index parameters + captures -> scalar results."""

    name: str
    blocks: list[Block]
    """``blocks[0]`` is the entry; its ``args`` are the parameters."""
    n_index: int
    """How many leading parameters are index parameters (the rank of the result)."""
    captures: list[Capture]
    """One per parameter after the index parameters, in order."""
    result_types: list[ScalarType]
    span: Span | None = None
    """Where the user's function is defined."""
    blocking: tuple[int, ...] = ()
    """Register-blocking factors, one per axis (``offload.opt.jam``); empty for an element
    function. A blocked function computes ``prod(blocking)`` elements per call: its index
    parameters are ``blocking[0]`` indices of axis 0, then ``blocking[1]`` of axis 1, ...,
    and it returns each element's results in turn, the copies in row-major order."""
    prologue: Function | None = None
    """Work hoisted out of the element loop (``offload.opt.hoist``): a function of the same
    captures with one index parameter, run once per call at index ``(0,)`` before the
    elements; its results are passed to this function as its last
    ``len(prologue.result_types)`` captures, one-element arrays read at index 0."""

    @property
    def hoisted(self) -> int:
        """How many trailing captures are the prologue's results (0 without a prologue)."""
        return len(self.prologue.result_types) if self.prologue is not None else 0

    @property
    def entry(self) -> Block:
        return self.blocks[0]

    @property
    def rank(self) -> int:
        """The rank of the index space (``n_index`` unless the function is blocked)."""
        return len(self.blocking) if self.blocking else self.n_index

    def index_axis(self, k: int) -> int:
        """The axis of index parameter ``k`` (``k`` itself unless blocked)."""
        if not self.blocking:
            return k
        for axis, f in enumerate(self.blocking):
            if k < f:
                return axis
            k -= f
        raise IndexError("not an index parameter")

    @property
    def params(self) -> list[Value]:
        return self.entry.args

    @property
    def index_params(self) -> list[Value]:
        return self.entry.args[: self.n_index]

    @property
    def capture_params(self) -> list[Value]:
        return self.entry.args[self.n_index :]

    def ops(self) -> Iterator[Op]:
        for block in self.blocks:
            yield from block.ops

    def predecessors(self) -> dict[Block, list[Block]]:
        """Each block's predecessors (with repetition for a two-way branch to one block)."""
        preds: dict[Block, list[Block]] = {b: [] for b in self.blocks}
        for block in self.blocks:
            for succ in block.successors():
                preds[succ].append(block)
        return preds
