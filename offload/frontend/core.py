"""The lowering core: the state every part of the lowerer shares, and its dispatch tables.

``LoweringCore`` holds the builder, the per-function context (source, environment, pending
returns, loops), the capture registry and the inline stack; the typing helpers every part
uses (``scalar``, ``const``, ``convert``, ``truth``); the one piece of CFG machinery
everything uses: ``merge_edges`` joins several incoming (block, environment) edges into one
block whose arguments carry every scalar that differs between the edges, with NEP 50 joined
types; and the two dispatch tables (AST node class -> handler) that the parts fill. A node
class no part handles is an ``UnsupportedSyntax`` error at that node (deny by default).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from offload.diagnostics import OffloadError, Span, TypeMismatch, UnsupportedSyntax
from offload.frontend.promote import TypeKey, describe_key, join
from offload.frontend.source import FunctionSource
from offload.frontend.values import (
    UNBOUND,
    LocalArray,
    Scalar,
    Step,
    TupleVal,
    Unbound,
    Val,
    describe,
    flatten,
    rebuild,
    structure,
)
from offload.ir.builder import Builder
from offload.ir.core import Block, Value
from offload.ir.ops import Opcode
from offload.ir.semantics import wrap_int
from offload.ir.types import U64, ScalarType

Env = dict[str, Val | Unbound]
Edge = tuple[Block, Env]
RESULT = "<result>"
"""Environment key under which value merges (returns, ``and``/``or``, ``x if c else y``)
carry their value."""


@dataclass
class LoopContext:
    """Edges leaving a loop body early."""

    breaks: list[Edge] = field(default_factory=list[Edge])
    continues: list[Edge] = field(default_factory=list[Edge])


@dataclass
class FunctionContext:
    """One function being lowered: the root or an inlined helper."""

    src: FunctionSource
    base_path: tuple[Step, ...]
    """Path from the lowering root to this function object (capture paths start here)."""
    locals: frozenset[str]
    """Names local to the function (never resolved as globals)."""
    env: Env = field(default_factory=dict[str, "Val | Unbound"])
    returns: list[Edge] = field(default_factory=list[Edge])
    loops: list[LoopContext] = field(default_factory=list[LoopContext])
    resolved: dict[str, Val] = field(default_factory=dict[str, Val])
    """Memo of names resolved outside the function (globals, closure cells)."""


ExprHandler = Callable[[Any], Val]
"""Lowers one expression node (of the class it is registered for) to its value."""
StmtHandler = Callable[[Any], None]
"""Lowers one statement node (of the class it is registered for)."""


class LoweringCore:
    """State, typing helpers and node dispatch shared by the parts of the lowerer."""

    def __init__(self, builder: Builder) -> None:
        self.b = builder
        self._ctx: FunctionContext | None = None
        self.live = True
        """False after return/break/continue: following statements are unreachable."""
        self.capture_values: dict[tuple[object, ...], Val] = {}
        self.capture_paths: list[tuple[Step, ...]] = []
        self.resolved_objects: dict[tuple[object, ...], tuple[tuple[Step, ...], object]] = {}
        """Helpers, modules and other objects resolved at compile time, by path: the
        compiled kernel is only valid while each path still leads to the same object."""
        self.inline_stack: list[object] = []
        self.settle: Callable[[Val, ast.AST], Val] = lambda val, node: val
        """Every expression's value passes here: an array expression over a local array
        is computed at once (``LocalArrays.settle``, set by ``Lowering.new``)."""
        self._expr_handlers: dict[type[ast.AST], ExprHandler] = {}
        self._stmt_handlers: dict[type[ast.AST], StmtHandler] = {}

    # -- dispatch ----------------------------------------------------------------------

    def add_handlers(
        self,
        exprs: Mapping[type[ast.expr], ExprHandler] | None = None,
        stmts: Mapping[type[ast.stmt], StmtHandler] | None = None,
    ) -> None:
        """Register a part's handlers (each node class is handled by one part)."""
        for cls, handler in (exprs or {}).items():
            assert cls not in self._expr_handlers, f"two handlers for {cls.__name__}"
            self._expr_handlers[cls] = handler
        for stmt_cls, stmt_handler in (stmts or {}).items():
            assert stmt_cls not in self._stmt_handlers, f"two handlers for {stmt_cls.__name__}"
            self._stmt_handlers[stmt_cls] = stmt_handler

    def expr(self, node: ast.expr) -> Val:
        """Lower one expression (deny by default)."""
        handler = self._expr_handlers.get(type(node))
        if handler is None:
            raise self.unsupported(node)
        return self.settle(handler(node), node)

    def stmts(self, body: list[ast.stmt]) -> None:
        """Lower a statement list, stopping at unreachable code (deny by default)."""
        for stmt in body:
            if not self.live:
                return  # unreachable code after return/break/continue
            handler = self._stmt_handlers.get(type(stmt))
            if handler is None:
                raise self.unsupported(stmt)
            try:
                handler(stmt)
            except RecursionError:
                # The innermost statement with room to build the error reports it (one
                # that has none raises RecursionError again, for the next one out).
                raise self.error(
                    UnsupportedSyntax,
                    "this statement is nested too deeply to compile",
                    stmt,
                    hint="split the expression into several assignments, or move part of "
                    "it into a helper function",
                ) from None

    # -- the function being lowered ----------------------------------------------------

    @property
    def ctx(self) -> FunctionContext:
        """The function being lowered (the root or an inlined helper)."""
        assert self._ctx is not None, "no function is being lowered"
        return self._ctx

    @ctx.setter
    def ctx(self, ctx: FunctionContext) -> None:
        self._ctx = ctx

    def save_context(self) -> FunctionContext | None:
        """The current function context (``None`` at the root of a delayed array)."""
        return self._ctx

    def restore_context(self, ctx: FunctionContext | None) -> None:
        self._ctx = ctx

    # -- locations and errors ----------------------------------------------------------

    def span(self, node: ast.AST | None) -> Span | None:
        if node is None or self._ctx is None:
            return None
        return self._ctx.src.span(node)

    def at(self, node: ast.AST | None) -> None:
        """Attach ``node``'s span to the ops built from now on."""
        span = self.span(node)
        if span is not None:
            self.b.span = span

    def error(
        self, cls: type[OffloadError], message: str, node: ast.AST | None, hint: str = ""
    ) -> OffloadError:
        return cls.at(message, self.span(node), hint=hint)

    def unsupported(self, node: ast.AST, what: str = "", hint: str = "") -> OffloadError:
        what = what or f"'{type(node).__name__}' syntax"
        return self.error(
            UnsupportedSyntax, f"{what} is not supported in element functions", node, hint
        )

    # -- scalars -----------------------------------------------------------------------

    def scalar(
        self, val: Val | Unbound, node: ast.AST | None, what: str = "this operand"
    ) -> Scalar:
        if isinstance(val, Scalar):
            return val
        raise self.error(
            TypeMismatch, f"{what} must be a number or bool, not a {describe(val)}", node
        )

    def const(self, value: bool | int | float, key: TypeKey) -> Scalar:
        t, weak = key
        if weak and t.is_int and type(value) is int and not fits_type(value, t):
            # A Python int beyond int64 is kept (as a weak uint64 constant) while it fits
            # uint64: NumPy 2 (NEP 50) casts it to a uint64 partner; any other partner
            # rejects it when the constant is converted (``convert``).
            if not fits_type(value, U64):
                raise TypeMismatch.at(
                    f"the Python int {value} does not fit int64 or uint64",
                    self.b.span,
                    hint="integers in element functions are 64-bit (uint64 up to 2**64 - 1)",
                )
            t = U64
        if t.is_float and t.bits < 64:
            # A strong float32 constant holds its float32 value (its truth, its folds).
            with np.errstate(over="ignore"):
                value = float(t.dtype.type(value))
        v = self.b.const(value, t)
        return Scalar(v, weak, const=value, nonneg=not t.is_float and value >= 0)

    def convert(self, s: Scalar, t: ScalarType, weak: bool | None = None) -> Scalar:
        """``s`` as type ``t`` (a CAST unless it already is); a constant is re-materialised."""
        w = s.weak if weak is None else weak
        if s.type == t:
            return s if w == s.weak else Scalar(s.value, w, s.const, s.nonneg)
        if s.const is not None and not (t.is_int and isinstance(s.const, float)):
            if s.weak and t.is_int and type(s.const) is int and not fits_type(s.const, t):
                # NumPy 2 (NEP 50) refuses a Python int its partner's type cannot hold.
                raise TypeMismatch.at(
                    f"the Python int {s.const} does not fit {t.dtype}",
                    self.b.span,
                    hint=f"use a value in {t.dtype}'s range, or convert the other operand",
                )
            c = bool(s.const) if t.is_bool else s.const
            if t.is_float:
                c = float(c)
            elif t.is_int:
                # A strong constant converts as NumPy's astype does: two's complement
                # (np.int8(np.uint8(200)) == -56); a weak one was checked to fit above.
                c = wrap_int(int(c), t.bits, t.is_signed)
            return self.const(c, (t, w))
        # A value >= 0 stays >= 0 where every value >= 0 of its type fits ``t`` (not uint64
        # -> int64, whose top half wraps negative).
        keep_nonneg = s.nonneg and t.is_int and _nonneg_max(s.type) <= _nonneg_max(t)
        return Scalar(self.b.cast(s.value, t), w, None, keep_nonneg)

    def truth(self, val: Val, node: ast.AST | None) -> Scalar:
        """Python truthiness as a bool scalar (weakness kept)."""
        s = self.scalar(val, node, "a condition")
        if s.type.is_bool:
            return s
        self.at(node)
        zero = self.b.const(0, s.type)
        c = None if s.const is None else bool(s.const)
        return Scalar(self.b.binary(Opcode.NE, s.value, zero), s.weak, c)

    # -- control flow ------------------------------------------------------------------

    def dead(self) -> None:
        self.live = False

    def position(self, block: Block) -> None:
        self.b.position_at_end(block)
        self.live = True

    def merge_edges(self, edges: list[Edge], hint: str) -> Env:
        """Join ``edges`` into one block (block arguments for differing scalars) and
        continue there; returns the merged environment. No edges: the code is dead."""
        if not edges:
            self.dead()
            return {}
        if len(edges) == 1:
            self.position(edges[0][0])
            return dict(edges[0][1])
        names = sorted({n for _, env in edges for n in env}, key=_name_order)
        out: Env = {}
        columns: list[tuple[TypeKey, list[Scalar], str]] = []
        pending: dict[str, tuple[object, list[Scalar | int]]] = {}
        for name in names:
            vals = [env.get(name, UNBOUND) for _, env in edges]
            unbound = next((v for v in vals if isinstance(v, Unbound)), None)
            if unbound is not None:
                out[name] = unbound
                continue
            first = vals[0]
            if all(v is first for v in vals):
                out[name] = first
                continue
            merged = self._merge_column(name, vals, columns)  # type: ignore[arg-type]
            if isinstance(merged, Unbound):
                out[name] = merged
            else:
                pending[name] = merged
        block = self.b.new_block([key[0] for key, _, _ in columns], hint=hint)
        for arg, (_, _, h) in zip(block.args, columns, strict=True):
            arg.hint = h if h != RESULT else None
        saved_span = self.b.span
        for e, (blk, _) in enumerate(edges):
            self.b.position_at_end(blk)
            args = [self.convert(col[e], key[0]).value for key, col, _ in columns]
            self.b.jump(block, args)
        self.b.span = saved_span
        self.position(block)
        for name, (shape, leaves) in pending.items():
            scalars: list[Scalar] = []
            for leaf in leaves:
                if isinstance(leaf, int):
                    key, col, _ = columns[leaf]
                    nonneg = all(c.nonneg for c in col)
                    scalars.append(Scalar(block.args[leaf], key[1], None, nonneg))
                else:
                    scalars.append(leaf)
            out[name] = rebuild(shape, scalars)
        return out

    def _merge_column(
        self,
        name: str,
        vals: list[Val],
        columns: list[tuple[TypeKey, list[Scalar], str]],
    ) -> tuple[object, list[Scalar | int]] | Unbound:
        shapes = {structure(v) for v in vals}
        flats = [flatten(v) for v in vals]
        if all(isinstance(v, LocalArray) for v in vals):
            return Unbound(
                "it names different local arrays on different paths (make one array before "
                "the branch or loop and write into it)"
            )
        if len(shapes) != 1 or any(f is None for f in flats):
            kinds = sorted({_kind(v) for v in vals})
            listed = ", ".join(kinds[:-1]) + f" and {kinds[-1]}" if len(kinds) > 1 else kinds[0]
            return Unbound(f"it holds different kinds of values on different paths ({listed})")
        leaves: list[Scalar | int] = []
        for k in range(len(flats[0] or [])):
            col = [f[k] for f in flats if f is not None]
            if all(c is col[0] for c in col):
                leaves.append(col[0])
                continue
            key = join(*((c.type, c.weak) for c in col))
            if key is None:
                types = ", ".join(sorted({describe_key((c.type, c.weak)) for c in col}))
                return Unbound(f"its types on different paths do not combine ({types})")
            leaves.append(len(columns))
            columns.append((key, col, name))
        return shapes.pop(), leaves

    def merge_values(self, edges: list[tuple[Block, Val]], node: ast.AST, hint: str) -> Val:
        """Join one value per edge (e.g. the arms of ``x if c else y``)."""
        env = self.merge_edges([(blk, {RESULT: v}) for blk, v in edges], hint)
        val = env.get(RESULT, UNBOUND)
        if isinstance(val, Unbound):
            raise self.error(TypeMismatch, f"the alternatives do not agree: {val.reason}", node)
        return val

    def inline_returns(self, returns: list[Edge], node: ast.AST, what: str) -> Val:
        """Merge a function's pending returns into its result value."""
        if not returns:  # (every path loops forever: ``while True`` without a way out)
            raise self.error(
                TypeMismatch,
                f"{what} never returns: no path leaves its loops to a return",
                node,
                hint="give the loop a condition or a return (CPython would never finish)",
            )
        env = self.merge_edges(returns, "ret")
        val = env.get(RESULT, UNBOUND)
        if isinstance(val, Unbound):
            raise self.error(
                TypeMismatch,
                f"{what} returns values that do not agree: {val.reason}",
                node,
                hint="return the same kind of value (one number, or tuples of one size) "
                "on every path",
            )
        return val

    def branch_on(
        self, cond: Scalar, then_hint: str, else_hint: str, *, uniform: bool = False
    ) -> tuple[Block, Block]:
        """Terminate the current block with a two-way branch to two new blocks."""
        t = self.b.new_block(hint=then_hint)
        e = self.b.new_block(hint=else_hint)
        self.b.branch(cond.value, t, e, uniform=uniform)
        return t, e


_KINDS = {
    "Scalar": "a number",
    "ArrayRef": "an array",
    "LocalArray": "a local array",
    "PyObj": "a Python object",
    "Getter": "a stencil's getter",
    "View": "an array view",
    "Elementwise": "an array expression",
    "BoundMethod": "a method",
}


def _kind(v: Val) -> str:
    """How a message names the kind of ``v``."""
    if isinstance(v, TupleVal):
        return f"a tuple of {len(v.items)}"
    return _KINDS.get(type(v).__name__, type(v).__name__.lower())


def _name_order(name: str) -> tuple[int, str]:
    return (1 if name == RESULT else 0, name)


def make_index_scalar(value: Value) -> Scalar:
    """An index parameter: a weak Python int known to be non-negative."""
    return Scalar(value, True, None, True)


def fits_type(value: int, t: ScalarType) -> bool:
    """Whether the int or bool type ``t`` holds ``value``."""
    bits = t.bits
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if t.is_signed else (0, (1 << bits) - 1)
    return lo <= value <= hi


def _nonneg_max(t: ScalarType) -> int:
    """The largest value of the integer or bool type ``t``."""
    return 1 if t.is_bool else (1 << (t.bits - int(t.is_signed))) - 1
