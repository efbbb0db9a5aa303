"""The shared view every restriction analysis has of one function: its kernel nodes.

``kernel_nodes`` yields the AST nodes that run inside the kernel, in source order. It does
not descend into constructs that are rejected as a whole (a nested ``def``, a ``lambda``, a
comprehension, ``raise ...``, ``import``): the construct itself is yielded, so its analysis
reports it once, and nothing inside it cascades into further, confusing diagnostics. Parts
evaluated outside the kernel (decorators, default values, annotations) are never yielded.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from offload.diagnostics import Span
from offload.frontend.source import FunctionNode, FunctionSource

OPAQUE: tuple[type[ast.AST], ...] = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.JoinedStr,
    ast.Match,
    ast.Import,
    ast.ImportFrom,
    ast.Global,
    ast.Nonlocal,
    ast.Raise,
    ast.Assert,
    ast.Delete,
    ast.Await,
    ast.Yield,
    ast.YieldFrom,
    ast.AsyncFor,
    ast.AsyncWith,
)
"""Nodes yielded but not descended into (rejected as a whole by one analysis)."""

_BODIES_ONLY: tuple[type[ast.AST], ...] = (ast.Try, ast.TryStar, ast.With)
"""Rejected statements whose nested statements are still checked (they are kernel code)."""


def kernel_nodes(root: FunctionNode) -> Iterator[ast.AST]:
    """Every node of ``root``'s body that runs in the kernel, in source order (pre-order)."""
    body = root.body
    stack: list[ast.AST] = list(reversed(body)) if isinstance(body, list) else [body]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(list(_children(node))))


def _children(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, OPAQUE):
        return
    if isinstance(node, _BODIES_ONLY):
        yield from getattr(node, "body", ())
        for handler in getattr(node, "handlers", ()):
            yield from handler.body
        yield from getattr(node, "orelse", ())
        yield from getattr(node, "finalbody", ())
        return
    if isinstance(node, ast.AnnAssign):
        # the annotation is not evaluated in the kernel; the target and value are
        yield node.target
        if node.value is not None:
            yield node.value
        return
    yield from ast.iter_child_nodes(node)


def local_names(root: FunctionNode) -> frozenset[str]:
    """Names bound inside the function: parameters and every assignment target."""
    args = root.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    for node in kernel_nodes(root):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return frozenset(names)


def reported_bindings(root: FunctionNode) -> frozenset[str]:
    """Names bound by constructs that are themselves reported (an import, a nested ``def``
    or ``class``, a local lambda): uses of them are not reported again."""
    names: set[str] = set()
    for node in kernel_nodes(root):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return frozenset(names)


def is_docstring(root: FunctionNode, node: ast.AST) -> bool:
    """Whether ``node`` is the docstring of ``root`` (a ``def`` whose first statement is a
    string expression)."""
    body = root.body
    return (
        isinstance(body, list)
        and bool(body)
        and isinstance(body[0], ast.Expr)
        and body[0].value is node
        and isinstance(node, ast.Constant)
        and isinstance(node.value, str)
    )


def keyword_span(src: FunctionSource, node: ast.AST, length: int) -> Span:
    """A span of ``length`` characters from the start of ``node`` (e.g. the ``try``
    keyword of a ``try`` statement), so that the caret does not cover a whole block."""
    full = src.span(node)
    return Span(full.file, full.line, full.col, full.line, full.col + length, full.text)


def find_else_span(src: FunctionSource, loop: ast.For | ast.While) -> Span:
    """The span of the ``else`` keyword of a loop's ``else`` clause (the AST has no node
    for it: search the lines between the loop body and the first ``else`` statement)."""
    first = loop.orelse[0]
    last_body_line = loop.body[-1].end_lineno or loop.body[-1].lineno
    for line in range(first.lineno, last_body_line - 1, -1):
        text = src.smap.line_text(line)
        stripped = text.lstrip()
        col = len(text) - len(stripped)
        if stripped.startswith("else") and stripped[4:].lstrip().startswith(":"):
            return Span(src.file, line, col, line, col + 4, text)
    return src.span(first)


@dataclass(frozen=True)
class FunctionContext:
    """One function under analysis (the element function or a helper it reaches)."""

    src: FunctionSource
    locals: frozenset[str]
    nodes: tuple[ast.AST, ...]
    reported: frozenset[str]
    """Names bound by constructs already reported (see ``reported_bindings``)."""
    callable_params: frozenset[str] = field(default_factory=frozenset)
    """Parameters bound to callables by the API (e.g. the element getter of ``traverse``)."""

    @staticmethod
    def of(src: FunctionSource, callable_params: frozenset[str] = frozenset()) -> FunctionContext:
        """The context of ``src``: its locals and kernel nodes."""
        node = src.node
        return FunctionContext(
            src,
            local_names(node),
            tuple(kernel_nodes(node)),
            reported_bindings(node),
            callable_params,
        )
