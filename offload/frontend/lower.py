"""The frontend's entry points: element function (or delayed array) -> typed SSA IR.

::

    lowered = lower(fn, rank)                    # Lowered(ir, captures), or OffloadError
    values = fetch_captures(fn, lowered)         # current captured values, every call
    key = capture_type_key(values)               # what the compiled kernel depends on

The IR's parameters are the ``rank`` index parameters, then one parameter per capture
(``lowered.captures[k]`` re-reads the value of ``ir.captures[k]`` at call time).
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from offload.diagnostics import CompileError, OffloadError, TypeMismatch, UnsupportedSyntax
from offload.frontend.arith import Arith
from offload.frontend.calls import Calls
from offload.frontend.captures import CapturePath, capture_type_key
from offload.frontend.conditions import Conditions
from offload.frontend.core import FunctionContext, LoweringCore, make_index_scalar
from offload.frontend.expr import Exprs
from offload.frontend.inline import Inliner
from offload.frontend.local_arrays import LocalArrays
from offload.frontend.local_exprs import LocalExprs
from offload.frontend.loops import Loops
from offload.frontend.names import Names
from offload.frontend.nodes import ArrayNode, delayed_key
from offload.frontend.reader import make_fetcher
from offload.frontend.source import get_source
from offload.frontend.stmt import Statements
from offload.frontend.tree import TreeLowering
from offload.frontend.values import Val, describe, flatten
from offload.ir.builder import Builder
from offload.ir.core import Branch, Function, Jump, Return
from offload.ir.ops import Opcode

__all__ = [
    "CapturePath",
    "Lowered",
    "capture_type_key",
    "delayed_key",
    "fetch_captures",
    "lower",
]


@dataclass(frozen=True)
class Lowered:
    """The frontend's output for one element function (or delayed array)."""

    ir: Function
    """Typed SSA IR; ``ir.captures[k]`` corresponds to ``captures[k]``."""
    captures: tuple[CapturePath, ...]
    """How to re-read each captured value from the lowering target at call time."""
    resolved: tuple[tuple[CapturePath, object], ...] = ()
    """Objects built into the kernel (helpers, modules) and the paths they were found by:
    the kernel stays valid only while every path still leads to the same object."""


@dataclass(frozen=True)
class Lowering:
    """One lowering: the core state and the parts that read trees and bodies (the other
    parts are reached through the core's dispatch tables)."""

    core: LoweringCore
    inliner: Inliner
    tree: TreeLowering

    @classmethod
    def new(cls, builder: Builder) -> Lowering:
        """The core and every part, each holding the parts it uses."""
        core = LoweringCore(builder)
        arith, names = Arith(core), Names(core)
        exprs = Exprs(core, arith, names)
        inliner = Inliner(core)
        tree = TreeLowering(core, arith, names, exprs, inliner)
        core.add_handlers(exprs=exprs.handlers())
        core.add_handlers(exprs=Conditions(core, arith).handlers())
        core.add_handlers(exprs=Calls(core, arith, exprs, inliner, tree).handlers())
        core.add_handlers(exprs=LocalArrays(core, arith, names).handlers())
        core.settle = LocalExprs(core, arith, names).settle
        core.add_handlers(stmts=Statements(core, arith, names).handlers())
        core.add_handlers(stmts=Loops(core).handlers())
        return cls(core, inliner, tree)


def lower(target: Callable[..., Any] | object, rank: int) -> Lowered:
    """Lower an element function of ``rank`` index arguments (or a delayed array) to IR.

    Raises an ``OffloadError`` (with a source span) for what it cannot lower. The
    restriction checks (allocation, writes, calls, recursion: ``offload.analysis``) are
    assumed to have run (``offload.lowering.check_and_lower``): unchecked, a construct they
    reject is at most an ``UnsupportedSyntax`` here."""
    try:
        if isinstance(target, ArrayNode):
            core = _lower_tree(target, rank)
        else:
            core = _lower_function(target, rank)
    except OffloadError:
        raise
    except RecursionError:
        # Outside any statement (``LoweringCore.stmts`` locates the rest): the function's
        # ``def``, or a delayed array's tree.
        raise _too_deep(target) from None
    except Exception as exc:  # a bug in offload: report it as one, never a raw traceback
        name = getattr(target, "__qualname__", type(target).__name__)
        raise CompileError(
            f"internal error in offload's frontend while lowering '{name}': "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    resolved = tuple((CapturePath(p), obj) for p, obj in core.resolved_objects.values())
    return Lowered(core.b.function, tuple(CapturePath(p) for p in core.capture_paths), resolved)


def _too_deep(target: object) -> OffloadError:
    if isinstance(target, types.FunctionType):
        src = get_source(target)
        return UnsupportedSyntax.at(
            f"'{src.name}' is nested too deeply to compile",
            src.smap.def_span(src.node),
            hint="split deep expressions into several assignments, or move parts into "
            "helper functions",
        )
    return UnsupportedSyntax.at(
        "the delayed array is nested too deeply to compile (too many operations applied "
        "one on top of another)",
        None,
        hint="compute an intermediate array with compute_s/compute_p and continue from it",
    )


def fetch_captures(target: object, lowered: Lowered) -> list[object]:
    """The current values of ``lowered``'s captures, read from ``target`` (every call)."""
    return make_fetcher(lowered.captures)(target)


def _lower_function(fn: object, rank: int) -> LoweringCore:
    if not isinstance(fn, types.FunctionType):
        get_source(fn)  # type: ignore[arg-type]  # raises SourceUnavailable with a hint
        raise AssertionError("unreachable")
    src = get_source(fn)
    node = src.node
    args = node.args
    if args.vararg or args.kwarg or args.kwonlyargs:
        raise UnsupportedSyntax.at(
            "an element function takes one int per dimension: no *args, **kwargs or "
            "keyword-only arguments",
            src.smap.def_span(node),
        )
    params = src.param_names()
    if len(params) != rank:
        raise TypeMismatch.at(
            f"element function '{src.name}' takes {len(params)} index argument(s) but the "
            f"shape has rank {rank}",
            src.smap.def_span(node),
            hint="an element function takes one int per dimension of the result",
        )
    name = "lambda" if isinstance(node, ast.Lambda) else fn.__name__
    builder = Builder(name, rank, span=src.smap.def_span(node), index_hints=params)
    low = Lowering.new(builder)
    core = low.core
    code = fn.__code__
    core.ctx = FunctionContext(
        src,
        (),
        frozenset(code.co_varnames) | frozenset(code.co_cellvars),
        env={p: make_index_scalar(v) for p, v in zip(params, builder.function.params, strict=True)},
    )
    core.inline_stack.append(code)
    result = low.inliner.body(src, "return a number (or a tuple of numbers) on every path")
    _finish(core, result, node)
    return core


def _lower_tree(target: ArrayNode, rank: int) -> LoweringCore:
    """Lower the tree ``target`` (of ``rank`` dimensions) into a new function."""
    shape = target.shape
    if len(shape) != rank:
        raise TypeMismatch.at(f"the delayed array has {len(shape)} dimensions, not {rank}", None)
    builder = Builder(f"delayed_{type(target).__name__.lower()}", rank)
    low = Lowering.new(builder)
    idx = [make_index_scalar(v) for v in builder.function.params]
    result = low.tree.element(target, (), idx)
    _finish(low.core, result, None)
    return low.core


def _finish(core: LoweringCore, result: Val, node: ast.AST | None) -> None:
    """Return ``result`` (flattened) from the function being built."""
    leaves = flatten(result)
    if not leaves:
        what = describe(result)
        raise TypeMismatch.at(
            f"an element function must return numbers, not a {what}",
            None if node is None else core.span(node),
            hint="return a number, a bool, or a non-empty tuple of them",
        )
    if node is not None:
        core.at(node)
    core.b.function.result_types = [s.type for s in leaves]
    core.b.ret([s.value for s in leaves])
    _drop_unused_constants(core.b.function)


def _drop_unused_constants(fn: Function) -> None:
    """Remove constants nobody uses: typing re-materialises a weak literal in the type it
    meets (``x * 2.0`` on float32 makes a float32 ``2.0``), leaving the original behind."""
    used: set[int] = set()
    for block in fn.blocks:
        for op in block.ops:
            used.update(id(v) for v in op.operands)
        t = block.terminator
        if isinstance(t, Jump):
            used.update(id(v) for v in t.args)
        elif isinstance(t, Branch):
            used.update(id(v) for v in (t.cond, *t.then_args, *t.else_args))
        elif isinstance(t, Return):
            used.update(id(v) for v in t.values)
    for block in fn.blocks:
        block.ops = [
            op for op in block.ops if op.opcode is not Opcode.CONST or id(op.result) in used
        ]
