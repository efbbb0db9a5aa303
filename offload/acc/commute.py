"""Whether a combine function commutes, read from its source: ``a + b``, ``a * b``,
``a & b``, ``a | b`` or ``a ^ b`` of its two parameters (either order) and nothing else.

Those give the same bits with their operands swapped for every type the language has
(IEEE addition and multiplication commute; NumPy's bool ``+`` is ``or``), so a strided
reduction tree that regroups the elements is allowed. Anything else -- ``max`` (which
keeps its first NaN), a matrix product, a function whose source is unavailable -- is
treated as associative only: its trees keep every partial a run of consecutive elements.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from offload.diagnostics import OffloadError
from offload.frontend.source import get_source

_COMMUTING = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor)


def commutes(f: Callable[..., Any]) -> bool:
    """True where ``f`` is syntactically one commuting operator of its two parameters."""
    try:
        node = get_source(f).node  # type: ignore[arg-type]
    except (OffloadError, TypeError, AttributeError):
        return False
    args = node.args
    if args.vararg or args.kwarg or args.kwonlyargs or len(args.args) != 2:
        return False
    params = {a.arg for a in args.args}
    if isinstance(node, ast.Lambda):
        expr: ast.expr | None = node.body
    elif len(node.body) == 1 and isinstance(node.body[0], ast.Return):
        expr = node.body[0].value
    else:
        return False
    if not (isinstance(expr, ast.BinOp) and isinstance(expr.op, _COMMUTING)):
        return False
    ops = (expr.left, expr.right)
    names = {o.id for o in ops if isinstance(o, ast.Name)}
    return all(isinstance(o, ast.Name) for o in ops) and names == params
