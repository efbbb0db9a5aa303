"""No writes to captured state: element functions are pure (index in, value out).

Stores into subscripts and attributes, and ``global``/``nonlocal`` declarations, are
reported as ``WriteNotAllowed``. Assigning to a plain name is fine: it binds a local.
"""

from __future__ import annotations

import ast

from offload.analysis.walk import FunctionContext
from offload.diagnostics import Diagnostic, WriteNotAllowed

RULE = WriteNotAllowed.rule
_PURE_HINT = "element functions are pure: return the value; compute_* stores it in the result"


def check_writes(ctx: FunctionContext) -> list[Diagnostic]:
    """``WriteNotAllowed`` for every store that does not bind a local name."""
    src = ctx.src
    out: list[Diagnostic] = []
    views = _view_names(ctx)
    arrays = _maybe_local_arrays(ctx)
    for node in ctx.nodes:
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            base = _root_name(node.value)
            viewed = views.get(base or "")
            if isinstance(node.value, ast.Subscript) or viewed is not None:
                what = f"through a view of captured '{viewed or base}'"
            elif base is not None and base in arrays:
                # A local name that may hold a local array (np.zeros(K), [0.0] * K, a
                # parameter): the frontend reports a write through anything else.
                continue
            else:
                what = f"to '{base}'" if base is not None else "to an array"
            out.append(
                Diagnostic(
                    f"writing {what} is not allowed in element functions",
                    src.span(node),
                    RULE,
                    _PURE_HINT + " (captured arrays are read-only inputs)",
                )
            )
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.append(
                Diagnostic(
                    f"assigning to attribute '{node.attr}' is not allowed in element functions",
                    src.span(node),
                    RULE,
                    _PURE_HINT,
                )
            )
        elif isinstance(node, ast.Global | ast.Nonlocal):
            keyword = "global" if isinstance(node, ast.Global) else "nonlocal"
            names = ", ".join(node.names)
            out.append(
                Diagnostic(
                    f"'{keyword} {names}' is not allowed: element functions cannot change "
                    "variables outside themselves",
                    src.span(node),
                    RULE,
                    _PURE_HINT + "; use a local variable",
                )
            )
    return out


def _view_names(ctx: FunctionContext) -> dict[str, str]:
    """Locals bound to a view (``row = a[i]``, ``v = row[1:]``) -> the array viewed."""
    views: dict[str, str] = {}
    for node in ctx.nodes:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Subscript)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            root = _root_name(node.value)
            if root is not None:
                views[node.targets[0].id] = views.get(root, root)
    return views


def _maybe_local_arrays(ctx: FunctionContext) -> set[str]:
    """Local names that may hold a local array: parameters, and names assigned a list
    display, a repeated list, a call (``np.zeros(K)``, a helper returning one) or
    another name."""
    fn = ctx.src.node
    names = {a.arg for a in fn.args.args + fn.args.posonlyargs}
    for node in ctx.nodes:
        if isinstance(node, ast.Assign) and isinstance(
            node.value, ast.List | ast.Call | ast.BinOp | ast.Name
        ):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names & ctx.locals


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Subscript | ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None
