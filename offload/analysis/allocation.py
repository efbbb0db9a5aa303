"""No allocation in kernels: containers, comprehensions, strings, closures, new arrays and
new objects are each reported as ``AllocationNotAllowed``.

Tuples are not allocations: the frontend flattens them into scalars.
"""

from __future__ import annotations

import ast

from offload.analysis.calls import CallKind, ResolvedCall
from offload.analysis.walk import FunctionContext, is_docstring
from offload.diagnostics import AllocationNotAllowed, Diagnostic

RULE = AllocationNotAllowed.rule
_SUFFIX = "allocate memory and are not allowed in element functions"
_TUPLE_HINT = "use a tuple for a fixed number of values, or a loop over range(...)"

_FORMS: dict[type[ast.AST], tuple[str, str]] = {
    # node type -> (message, hint)
    ast.List: (f"list literals {_SUFFIX}", _TUPLE_HINT),
    ast.Set: (f"set literals {_SUFFIX}", _TUPLE_HINT),
    ast.Dict: (f"dict literals {_SUFFIX}", "use a tuple, or if/elif to pick between values"),
    ast.ListComp: (f"list comprehensions {_SUFFIX}", "accumulate in a loop over range(...)"),
    ast.SetComp: (f"set comprehensions {_SUFFIX}", "accumulate in a loop over range(...)"),
    ast.DictComp: (f"dict comprehensions {_SUFFIX}", "accumulate in a loop over range(...)"),
    ast.GeneratorExp: (
        f"generator expressions {_SUFFIX}",
        "accumulate in a loop: s = 0; for k in range(n): s += a[k]",
    ),
    ast.JoinedStr: (f"f-strings {_SUFFIX}", "kernels compute numbers; remove the string"),
    ast.Lambda: (
        f"lambdas inside element functions create closures that {_SUFFIX}",
        "define the function at module level and call it by name",
    ),
}


def check_allocation(ctx: FunctionContext, calls: list[ResolvedCall]) -> list[Diagnostic]:
    """``AllocationNotAllowed`` for every allocating expression and call."""
    src = ctx.src
    out: list[Diagnostic] = []
    for node in ctx.nodes:
        form = _FORMS.get(type(node))
        if form is not None:
            if isinstance(node, ast.List | ast.Set) and not isinstance(
                getattr(node, "ctx", ast.Load()), ast.Load
            ):
                continue  # a list as an assignment target: reported by the syntax analysis
            out.append(Diagnostic(form[0], src.span(node), RULE, form[1]))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str | bytes)
            and not is_docstring(src.node, node)
        ):
            kind = "string" if isinstance(node.value, str) else "bytes"
            out.append(
                Diagnostic(
                    f"{kind} literals {_SUFFIX}",
                    src.span(node),
                    RULE,
                    "kernels compute numbers; remove the string (docstrings are fine)",
                )
            )
    for call in calls:
        if call.kind is CallKind.ALLOCATES:
            out.append(Diagnostic(call.reason, src.span(call.node), RULE, call.hint))
    return out
