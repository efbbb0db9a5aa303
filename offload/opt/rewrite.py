"""The rewriting engine shared by rule-table passes (``fold``, ``divmod``).

A ``Rule`` is data: the opcode it matches, a one-line algebra, and a function that returns
the value replacing the op (or ``None`` when it does not apply). Rules build new ops through
the ``Rewriter``, which inserts them before the op being rewritten and simplifies them in
turn, so that a rule's output is folded like any other op.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.analysis.range_scope import Dominance
from offload.analysis.ranges import Range, RangeFacts, type_range
from offload.diagnostics import Span
from offload.ir.cfg import reverse_postorder
from offload.ir.core import Block, Function, Op, Value
from offload.ir.ops import LOCAL_OPS, Opcode, commutes
from offload.ir.semantics import SemanticsError, eval_op, wrap_int
from offload.ir.types import ScalarType
from offload.opt.poly import Expander, Poly
from offload.opt.util import remove_unreachable, replace_uses, resolve

NOT_FOLDABLE = frozenset({Opcode.CONST, Opcode.LOAD, Opcode.SHAPE}) | LOCAL_OPS
"""Ops whose value depends on more than their operands' values."""


@dataclass(frozen=True)
class Rule:
    """One rewrite: ``opcode`` matched, ``algebra`` stated, ``apply`` returns the new value."""

    name: str
    opcode: Opcode
    algebra: str
    """The identity the rule relies on, with its preconditions."""
    apply: Callable[[Op, Rewriter], Value | None]


class Rewriter:
    """Walks a function in reverse postorder applying ``rules`` to every op."""

    def __init__(self, fn: Function, rules: Sequence[Rule], fastmath: bool = False) -> None:
        self.fn = fn
        self.fastmath = fastmath
        self.by_opcode: dict[Opcode, list[Rule]] = {}
        for rule in rules:
            self.by_opcode.setdefault(rule.opcode, []).append(rule)
        self.defs: dict[Value, Op] = {}
        self.mapping: dict[Value, Value] = {}
        self.block: Block = fn.entry
        self._out: list[Op] = []
        self._depth = 0
        self._span: Span | None = None
        self.changed = False

    # -- queries used by rules ---------------------------------------------------------

    def const(self, value: Value) -> Any:
        """The Python constant ``value`` holds, or ``None``."""
        op = self.defs.get(value)
        if op is not None and op.opcode is Opcode.CONST:
            return op.attrs["value"]
        return None

    def is_const(self, value: Value, wanted: object) -> bool:
        """Whether ``value`` is a constant equal to ``wanted`` (type and sign of zero too)."""
        c = self.const(value)
        if c is None or type(c) is not type(wanted):
            return False
        if isinstance(c, float) and isinstance(wanted, float):
            return c == wanted and np.signbit(c) == np.signbit(wanted)
        return bool(c == wanted)

    def def_of(self, value: Value, opcode: Opcode | None = None) -> Op | None:
        """The op defining ``value`` (if it has ``opcode`` when one is given)."""
        op = self.defs.get(value)
        if op is None or (opcode is not None and op.opcode is not opcode):
            return None
        return op

    # -- building ----------------------------------------------------------------------

    def emit(
        self,
        opcode: Opcode,
        operands: list[Value],
        result_type: ScalarType,
        attrs: dict[str, Any] | None = None,
    ) -> Value:
        """A new op before the one being rewritten, itself simplified; returns its value."""
        op = Op(opcode, list(operands), Value(result_type), dict(attrs or {}), self._span)
        return self._simplify_and_place(op)

    def make_const(self, value: object, type: ScalarType) -> Value:
        """A ``CONST`` of ``type`` holding ``value`` converted to the type's Python kind."""
        return self.emit(Opcode.CONST, [], type, {"value": python_scalar(value, type)})

    # -- the walk ----------------------------------------------------------------------

    def run(self) -> bool:
        """Rewrite the whole function; return whether anything changed."""
        self._span = None
        for block in reverse_postorder(self.fn):
            self.block = block
            self._out = []
            for op in block.ops:
                op.operands = [resolve(self.mapping, v) for v in op.operands]
                self._span = op.span
                self._simplify_and_place(op)
            block.ops = self._out
        replace_uses(self.fn, self.mapping)
        remove_unreachable(self.fn)
        return self.changed or bool(self.mapping)

    def _simplify_and_place(self, op: Op) -> Value:
        self._depth += 1
        try:
            new = self._simplify(op) if self._depth < 16 else None
        finally:
            self._depth -= 1
        if new is not None and new is not op.result:
            self.mapping[op.result] = new
            return new
        self._out.append(op)
        self.defs[op.result] = op
        return op.result

    def _simplify(self, op: Op) -> Value | None:
        if self._fold_constant(op):
            return None
        if (
            len(op.operands) == 2
            and commutes(
                op.opcode, isinstance(op.result.type, ScalarType) and op.result.type.is_float
            )
            and self.const(op.operands[0]) is not None
            and self.const(op.operands[1]) is None
        ):
            # Constants to the right: one canonical form for CSE and for the rules.
            op.operands.reverse()
            self.changed = True
        for rule in self.by_opcode.get(op.opcode, ()):
            new = rule.apply(op, self)
            if new is not None:
                return new
        return None

    def _fold_constant(self, op: Op) -> bool:
        if op.opcode in NOT_FOLDABLE or not isinstance(op.result.type, ScalarType):
            return False
        values = [self.const(v) for v in op.operands]
        if any(v is None for v in values):
            return False
        try:
            args = [np_scalar(v, x.type) for v, x in zip(values, op.operands, strict=True)]
            result = eval_op(op.opcode, op.attrs, args, op.result.type)
        except (SemanticsError, TypeError, ValueError, OverflowError):
            return False
        op.opcode = Opcode.CONST
        op.operands = []
        op.attrs = {"value": python_scalar(result, op.result.type)}
        self.changed = True
        return True


class FactRewriter(Rewriter):
    """A rewriter that knows the range facts and the dominance of the function it rewrites,
    and where each op of the function was before the walk (``find``)."""

    def __init__(self, fn: Function, rules: Sequence[Rule], fastmath: bool = False) -> None:
        super().__init__(fn, rules, fastmath)
        self.facts = RangeFacts(fn)
        self.dom = Dominance(fn)
        self.numbering: dict[Value, int] = {}
        self.placed: dict[tuple[Opcode, Value, Value], list[tuple[Block, Value]]] = {}
        for block in fn.blocks:
            for v in block.args:
                self.order(v)
            for op in block.ops:
                self.order(op.result)
                if len(op.operands) == 2:
                    key = (op.opcode, op.operands[0], op.operands[1])
                    self.placed.setdefault(key, []).append((block, op.result))

    def range(self, v: Value) -> Range:
        """The range of integer ``v`` where the op being rewritten is."""
        r = self.facts.range_of(v, self.block)
        if r is None:
            assert isinstance(v.type, ScalarType)
            return type_range(v.type)
        return r

    def order(self, v: Value) -> int:
        """A fixed number for ``v``: the canonical order of polynomial atoms."""
        return self.numbering.setdefault(v, len(self.numbering))

    def expander(self, t: ScalarType) -> Expander:
        """An expander of ``t`` values through the definitions seen so far."""
        return Expander(t, self.def_of, self.order)

    def find(self, opcode: Opcode, a: Value, b: Value) -> tuple[Value | None, bool]:
        """Whether ``opcode(a, b)`` is computed in line with the op being rewritten:
        ``(value, True)`` if a copy dominates it (``value`` usable here), ``(None, True)``
        if a copy is dominated by it (an equal op emitted here makes that one redundant for
        ``cse``), ``(None, False)`` if neither."""
        later = False
        for block, original in self.placed.get((opcode, a, b), ()):
            v = resolve(self.mapping, original)
            if block is self.block:
                if v in self.defs:  # placed already: before the op being rewritten
                    return v, True
                later = True
            elif self.dom.strictly_dominates(block, self.block):
                return v, True
            elif self.dom.strictly_dominates(self.block, block):
                later = True
        return None, later

    def build(self, p: Poly, t: ScalarType) -> Value:
        """IR computing ``p`` (terms in canonical order)."""
        total: Value | None = None
        for m, c in sorted(p.items(), key=lambda mc: [self.order(a) for a in mc[0]]):
            term: Value | None = None
            for atom in m:
                term = atom if term is None else self.emit(Opcode.MUL, [term, atom], t)
            if term is None:
                term = self.make_const(c, t)
            elif c != 1:
                term = self.emit(Opcode.MUL, [term, self.make_const(c, t)], t)
            total = term if total is None else self.emit(Opcode.ADD, [total, term], t)
        return total if total is not None else self.make_const(0, t)


def np_scalar(value: object, type: object) -> np.generic:
    """``value`` as a NumPy scalar of the IR scalar type ``type``."""
    assert isinstance(type, ScalarType)
    return type.dtype.type(value)  # type: ignore[no-any-return]


def python_scalar(value: object, type: ScalarType) -> bool | int | float:
    """A constant's attribute value: a Python bool/int/float of ``type``'s kind."""
    if isinstance(value, np.generic):
        value = value.item()
    if type.is_bool:
        return bool(value)
    if type.is_int:  # wrapped into the type: x - (-128) on int8 is x + (-128)
        return wrap_int(int(value), type.bits, type.is_signed)  # type: ignore[call-overload]
    # Round through the type so that an f32 constant holds an f32-representable value.
    return float(type.dtype.type(value))  # type: ignore[arg-type]
