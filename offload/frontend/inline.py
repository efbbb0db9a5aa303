"""Inlining of helpers: a plain Python function or lambda called from an element function
(or by a delayed array) is lowered in place, specialised by its argument values.

Its ops keep their own source spans, and an error inside a helper carries a note pointing
at the call site. A helper that calls itself (directly or not) is ``RecursionNotAllowed``.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from offload.diagnostics import (
    Note,
    OffloadError,
    RecursionNotAllowed,
    Span,
    TypeMismatch,
    UnsupportedSyntax,
)
from offload.frontend.core import RESULT, FunctionContext, LoweringCore
from offload.frontend.source import FunctionSource, get_source
from offload.frontend.values import PyObj, Step, Val
from offload.ir.types import BOOL, F64, I64


@dataclass(frozen=True)
class Inliner:
    """Binds arguments to a helper's parameters and lowers its body (one per lowering)."""

    core: LoweringCore

    def inline(
        self,
        fn: Callable[..., Any],
        path: tuple[Step, ...] | None,
        args: list[Val],
        kwargs: dict[str, Val],
        node: ast.AST | None,
    ) -> Val:
        """Inline ``fn(*args, **kwargs)``; ``node`` is the call (``None`` for a delayed
        array's function, called by the library)."""
        call_span = None if node is None else self.core.span(node)
        if not isinstance(fn, types.FunctionType):
            get_source(fn)  # raises SourceUnavailable with a hint
            raise AssertionError("unreachable")
        try:
            return self._inline(fn, path, args, kwargs, node)
        except OffloadError as exc:
            if call_span is None:
                raise
            note = Note(f"in '{fn.__name__}' called from here", call_span)
            diags = tuple(replace(d, notes=(*d.notes, note)) for d in exc.diagnostics)
            raise type(exc)(diagnostics=diags) from None

    def _inline(
        self,
        fn: types.FunctionType,
        path: tuple[Step, ...] | None,
        args: list[Val],
        kwargs: dict[str, Val],
        node: ast.AST | None,
    ) -> Val:
        code = fn.__code__
        if code in self.core.inline_stack:
            where = self.core.span(node) if node is not None else None
            raise RecursionNotAllowed.at(
                f"recursion is not allowed in element functions ('{fn.__name__}' calls itself)",
                where,
                hint="rewrite it as a loop",
            )
        src = get_source(fn)
        fnode = src.node
        a = fnode.args
        if a.vararg or a.kwarg or a.kwonlyargs:
            raise UnsupportedSyntax.at(
                f"'{fn.__name__}' takes *args, **kwargs or keyword-only arguments, which "
                "helpers of element functions cannot",
                src.smap.def_span(fnode),
            )
        params = src.param_names()
        bound = self._bind(fn, params, args, kwargs, node=node, def_span=src.smap.def_span(fnode))
        ctx = FunctionContext(
            src,
            path if path is not None else (("const", fn),),
            frozenset(code.co_varnames) | frozenset(code.co_cellvars),
            env=dict(bound),
        )
        saved_ctx, saved_span = self.core.save_context(), self.core.b.span
        self.core.ctx = ctx
        self.core.inline_stack.append(code)
        try:
            result = self.body(src, "return a number (or a tuple) on every path")
        finally:
            self.core.inline_stack.pop()
            self.core.restore_context(saved_ctx)
            self.core.b.span = saved_span
        return result

    def _bind(
        self,
        fn: types.FunctionType,
        params: list[str],
        args: list[Val],
        kwargs: dict[str, Val],
        *,
        node: ast.AST | None,
        def_span: Span,
    ) -> dict[str, Val]:
        defaults = fn.__defaults__ or ()
        first_default = len(params) - len(defaults)
        bound: dict[str, Val] = dict(zip(params, args, strict=False))
        problem = ""
        if len(args) > len(params):
            problem = f"takes {len(params)} arguments but {len(args)} were given"
        for kw, v in kwargs.items():
            if kw not in params or kw in bound:
                problem = problem or f"got an unexpected or repeated argument '{kw}'"
            bound[kw] = v
        for k, p in enumerate(params):
            if p in bound:
                continue
            if k < first_default:
                problem = problem or f"is missing the argument '{p}'"
                continue
            d = defaults[k - first_default]
            if type(d) not in (bool, int, float):
                problem = problem or f"has a default for '{p}' that is not a number"
                continue
            key = (BOOL if type(d) is bool else I64 if type(d) is int else F64, True)
            bound[p] = self.core.const(d, key)
        if problem:
            where = self.core.span(node) if node is not None else None
            notes = (Note(f"'{fn.__name__}' is defined here", def_span),)
            raise TypeMismatch.at(f"'{fn.__name__}' {problem}", where, notes=notes)
        return bound

    def body(self, src: FunctionSource, hint: str) -> Val:
        """Lower the body of ``src`` (a ``def`` or a lambda) in the current context and
        merge its returns into its result; ``hint`` is for a path without a return."""
        fnode = src.node
        if isinstance(fnode, ast.Lambda):
            value = self.core.expr(fnode.body)
            self.core.ctx.returns.append((self.core.b.block, {RESULT: value}))
            self.core.dead()
        else:
            self.core.stmts(fnode.body)
            if self.core.live and len(self.core.inline_stack) > 1:
                # A helper that falls off its end returns None, as Python's does (one that
                # only writes into a local array it was passed); using it is an error.
                none = PyObj(None, None, "None")
                self.core.ctx.returns.append((self.core.b.block, {RESULT: none}))
                self.core.dead()
            if self.core.live:
                raise TypeMismatch.at(
                    f"'{src.name}' can reach its end without returning a value",
                    src.smap.def_span(fnode),
                    hint=hint,
                )
        return self.core.inline_returns(self.core.ctx.returns, fnode, f"'{src.name}'")
