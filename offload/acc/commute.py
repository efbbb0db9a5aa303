"""Whether a combine function commutes, read from its source: ``a + b``, ``a * b``,
``a & b``, ``a | b`` or ``a ^ b`` of its two parameters (either order) and nothing else,
or a tuple of such operators over the same component of each (``a[0] + b[0], a[1] *
b[1]``: a tuple fold's component-wise sum or product).

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
    if expr is None:
        return False
    if isinstance(expr, ast.Tuple):
        return bool(expr.elts) and all(_commuting(e, params, component=True) for e in expr.elts)
    return _commuting(expr, params, component=False)


def _commuting(expr: ast.expr, params: set[str], *, component: bool) -> bool:
    """``expr`` is one commuting operator of the two parameters (``component``: of the
    same constant component of each, ``a[k] + b[k]``)."""
    if not (isinstance(expr, ast.BinOp) and isinstance(expr.op, _COMMUTING)):
        return False
    names: set[str] = set()
    keys: set[object] = set()
    for o in (expr.left, expr.right):
        if component:
            if not (
                isinstance(o, ast.Subscript)
                and isinstance(o.value, ast.Name)
                and isinstance(o.slice, ast.Constant)
                and type(o.slice.value) is int
            ):
                return False
            names.add(o.value.id)
            keys.add(o.slice.value)
        elif isinstance(o, ast.Name):
            names.add(o.id)
        else:
            return False
    return names == params and len(keys) <= 1
