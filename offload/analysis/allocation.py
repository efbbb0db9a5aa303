"""No allocation in kernels: containers, comprehensions, strings, closures, new arrays and
new objects are each reported as ``AllocationNotAllowed``.

Tuples are not allocations: the frontend flattens them into scalars. Small local arrays
(``np.zeros(K)``, ``[0.0] * K``, list displays) are not either: the frontend
(``offload/frontend/local_arrays.py``) accepts them where their size is a compile-time
constant and reports any other as ``AllocationNotAllowed`` itself; a ``dtype=`` string is
not a string value.
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
    dtype_strings = (
        {
            id(node.value)
            for node in ctx.nodes
            if isinstance(node, ast.keyword) and node.arg == "dtype"
        }
        | {
            id(arg)  # np.zeros(3, "float32"): a dtype by position
            for call in calls
            if call.intrinsic is not None and call.intrinsic.kind == "local"
            for arg in call.node.args[1:]
        }
    )
    for node in ctx.nodes:
        if isinstance(node, ast.List) and any(isinstance(e, ast.List) for e in node.elts):
            if not _inside_np_array(node, ctx):
                hint = "use np.array([[a, b], [c, d]]) for a small matrix"
                out.append(Diagnostic(f"lists of lists {_SUFFIX}", src.span(node), RULE, hint))
            continue
        form = _FORMS.get(type(node))
        if form is not None:
            if isinstance(node, ast.Set) and not isinstance(
                getattr(node, "ctx", ast.Load()), ast.Load
            ):
                continue  # a list as an assignment target: reported by the syntax analysis
            out.append(Diagnostic(form[0], src.span(node), RULE, form[1]))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str | bytes)
            and not is_docstring(src.node, node)
            and id(node) not in dtype_strings
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
        elif call.intrinsic is not None and call.intrinsic.kind == "local":
            out.extend(_local_array_size(ctx, call))
    return out


def _inside_np_array(node: ast.List, ctx: FunctionContext) -> bool:
    """Whether ``node`` is the argument of a call (``np.array([[a, b], [c, d]])``: the
    frontend checks that the call is np.array)."""
    return any(isinstance(n, ast.Call) and any(a is node for a in n.args) for n in ctx.nodes)


_SINGULAR = "allocates memory and is not allowed in element functions"
_LOCAL_HINT = (
    "a local array's size must be known when the kernel is compiled: a literal, a constant "
    "expression or a captured int"
)


def _local_array_size(ctx: FunctionContext, call: ResolvedCall) -> list[Diagnostic]:
    """A local array (``np.zeros(K)``) whose size reads an array or calls a function is
    surely not a compile-time constant; the frontend decides the rest (names may be
    constants) and reports them with the same rule."""
    node = call.node
    if not node.args:
        return []
    arg = node.args[0]
    if call.intrinsic is not None and call.intrinsic.name == "array":
        if isinstance(arg, ast.List | ast.Tuple):
            return []
        return [Diagnostic(f"'{call.name}' of anything but a list or tuple display "
                           f"{_SINGULAR}", ctx.src.span(node), RULE,
                           "write np.array([x, y, z]) with a fixed number of values")]  # fmt: skip
    if any(isinstance(n, ast.Call | ast.Subscript | ast.Attribute) for n in ast.walk(arg)):
        return [
            Diagnostic(
                f"'{call.name}' with a size that is not a compile-time constant {_SINGULAR}",
                ctx.src.span(node),
                RULE,
                _LOCAL_HINT,
            )
        ]
    return []
