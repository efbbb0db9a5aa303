"""Call and name resolution: every call must resolve, when the kernel is compiled, to an
intrinsic (offload/frontend/intrinsics.py) or to a plain Python helper (inlined).

``resolve_calls`` classifies each call of a function; ``check_calls`` reports the calls
that cannot be resolved (``UnresolvedCall``) and names bound nowhere. Calls that allocate
(``np.zeros``, constructing an object) are classified here and reported by allocation.py;
helper calls feed the call graph (callgraph.py).
"""

from __future__ import annotations

import ast
import builtins
import enum
import sys
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.analysis.walk import FunctionContext
from offload.diagnostics import Diagnostic, UnresolvedCall, UnsupportedSyntax
from offload.frontend.intrinsics import Intrinsic, lookup_intrinsic
from offload.frontend.source import MISSING

RULE = UnresolvedCall.rule

NUMPY_ALLOCATORS = frozenset(
    {
        "array", "asarray", "asanyarray", "ascontiguousarray", "zeros", "ones", "empty",
        "full", "zeros_like", "ones_like", "empty_like", "full_like", "arange", "linspace",
        "logspace", "geomspace", "eye", "identity", "copy", "concatenate", "stack", "vstack",
        "hstack", "tile", "repeat", "meshgrid", "indices", "fromfunction", "frombuffer",
    }
)  # fmt: skip
"""NumPy functions that create arrays: reported as allocations, not as unknown calls."""

LIBRARY_ROOTS = frozenset(
    {
        "numpy", "math", "cmath", "random", "builtins", "offload", "numba", "llvmlite", "cupy",
        "cupyx", "scipy", "pandas", "torch", "jax", "jaxlib", "dask", "xarray", "numexpr",
    }
)  # fmt: skip
"""Top-level packages whose Python functions are library code, never inlined helpers (their
source is not in the subset and is not the user's); the standard library's modules are too.
A library call is known by the module that defines it, not by the folder its file is in: a
helper in a package installed under site-packages is a helper like any other."""

KEYWORDS = frozenset(
    {
        ("enumerate", "start"), ("round", "decimals"), ("around", "decimals"),
        ("round", "ndigits"), ("isclose", "rtol"), ("isclose", "atol"),
        ("isclose", "equal_nan"), ("var", "ddof"), ("std", "ddof"),
    }
)  # fmt: skip
"""(intrinsic, keyword) pairs the frontend accepts: ``enumerate(row, start=1)``,
``np.round(x, decimals=2)``, ``round(x, ndigits=2)``, ``np.isclose(a, b, atol=1e-6)``."""

ARRAY_METHODS = frozenset(
    {
        "sum",
        "prod",
        "min",
        "max",
        "argmin",
        "argmax",
        "mean",
        "all",
        "any",
        "dot",
        "astype",
        "item",
        "var",
        "std",
    }
)
"""Reduction methods of arrays and views (``row.sum()``: offload/frontend/reductions.py), and
the conversions ``.astype(t)`` and a scalar's ``.item()`` (offload/frontend/calls.py)."""

ALLOWED_CALLS_HINT = (
    "element functions may call min, max, abs, int, float, bool, round, len, range, divmod, "
    "pow, math.* and NumPy ufuncs (np.sqrt, np.float32, ...), and plain Python helper functions"
)


class CallKind(enum.Enum):
    INTRINSIC = "intrinsic"
    HELPER = "helper"
    GETTER = "getter"
    """A parameter bound to a callable by the API (``traverse``'s element getter)."""
    IGNORED = "ignored"
    """A call through a name whose binding is itself reported (a local lambda, an import
    inside the kernel): not reported twice."""
    ALLOCATES = "allocates"
    UNRESOLVED = "unresolved"
    METHOD = "method"
    """A reduction method (``row.sum()``) of a value that may be an array or a view: the
    frontend checks the receiver."""


@dataclass(frozen=True)
class ResolvedCall:
    """What one call expression calls."""

    node: ast.Call
    kind: CallKind
    name: str
    """The callee as written (``np.zeros``, ``fib``)."""
    target: Any = None
    """The Python object called (a function for helpers, the intrinsic's object)."""
    intrinsic: Intrinsic | None = None
    reason: str = ""
    """For UNRESOLVED/ALLOCATES: the diagnostic message."""
    hint: str = ""


_LOCAL: Any = object()  # sentinel: the expression is a value computed in the kernel


def dotted_name(node: ast.expr) -> str | None:
    """``np.random.rand`` for that attribute chain, ``None`` for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr}" if base is not None else None
    return None


def resolve_value(ctx: FunctionContext, node: ast.expr) -> Any:
    """The compile-time object ``node`` denotes: a captured value, a module attribute,
    ``MISSING`` (bound nowhere), ``_LOCAL`` (computed in the kernel) or ``None`` (an
    attribute of a non-module object, which is not looked at: properties run code)."""
    if isinstance(node, ast.Name):
        if node.id in ctx.locals:
            return _LOCAL
        return ctx.src.lookup(node.id)
    if isinstance(node, ast.Attribute):
        base = resolve_value(ctx, node.value)
        if isinstance(base, types.ModuleType):
            try:
                return getattr(base, node.attr, MISSING)
            except Exception:  # a lazy module's __getattr__ may fail to import: unresolved
                return MISSING
        if base is _LOCAL or base is MISSING:
            return base
        return None
    return _LOCAL


def resolve_calls(ctx: FunctionContext) -> list[ResolvedCall]:
    """Every call of the function, classified."""
    return [
        _resolve(ctx, node)
        for node in ctx.nodes
        if isinstance(node, ast.Call) and not isinstance(node.func, ast.Lambda)
    ]


def _resolve(ctx: FunctionContext, node: ast.Call) -> ResolvedCall:
    func = node.func
    name = dotted_name(func) or ast.unparse(func)

    def unresolved(reason: str, hint: str = ALLOWED_CALLS_HINT) -> ResolvedCall:
        return ResolvedCall(node, CallKind.UNRESOLVED, name, reason=reason, hint=hint)

    if not isinstance(func, ast.Name | ast.Attribute):
        return unresolved(
            f"the callee of '{_short(node)}' cannot be resolved when the kernel is compiled",
            "call a function by its name",
        )
    if isinstance(func, ast.Name) and func.id in ctx.callable_params:
        return ResolvedCall(node, CallKind.GETTER, name)
    if name.split(".")[0] in ctx.reported:
        return ResolvedCall(node, CallKind.IGNORED, name)
    obj = resolve_value(ctx, func)
    if isinstance(func, ast.Attribute) and func.attr in ARRAY_METHODS:
        owner = resolve_value(ctx, func.value)
        if owner is _LOCAL or isinstance(owner, np.ndarray):
            return ResolvedCall(node, CallKind.METHOD, name)
    if obj is _LOCAL:
        if isinstance(func, ast.Name):
            return unresolved(
                f"'{name}' is a local variable; calls through variables cannot be resolved "
                "when the kernel is compiled",
                "call the function by its module-level name",
            )
        return unresolved(
            f"method calls are not supported in element functions: '{_short(node)}'",
            "methods cannot be compiled; use a function such as abs(x), math.* or np.*",
        )
    if obj is None:
        assert isinstance(func, ast.Attribute)
        owner = resolve_value(ctx, func.value)
        kind = type(owner).__name__
        hint = (
            "array methods allocate or reduce; write the loop out, reading a[i] per element"
            if isinstance(owner, np.ndarray)
            else "call a module-level function instead"
        )
        return unresolved(
            f"'{name}' calls a method of a captured {kind} object, which cannot be compiled",
            hint,
        )
    if obj is MISSING:
        if isinstance(func, ast.Attribute) and resolve_value(ctx, func.value) is not MISSING:
            return unresolved(f"'{name}' does not exist", ALLOWED_CALLS_HINT)
        return unresolved(
            f"name '{name.split('.')[0]}' is not defined", "define or import it at module level"
        )
    intrinsic = lookup_intrinsic(obj)
    if intrinsic is not None:
        return ResolvedCall(node, CallKind.INTRINSIC, name, obj, intrinsic)
    if _is_numpy_allocator(obj):
        return ResolvedCall(
            node,
            CallKind.ALLOCATES,
            name,
            obj,
            reason=f"'{name}' creates an array: allocation is not allowed in element functions",
            hint="an element function computes one value; read captured arrays instead of "
            "creating new ones",
        )
    if isinstance(obj, type):
        return ResolvedCall(
            node,
            CallKind.ALLOCATES,
            name,
            obj,
            reason=f"constructing a '{obj.__name__}' object allocates memory and is not "
            "allowed in element functions",
            hint="compute with scalars; return a tuple for several values",
        )
    if isinstance(obj, types.FunctionType) and not _is_library(obj):
        return ResolvedCall(node, CallKind.HELPER, name, obj)
    if obj is builtins.print:
        return unresolved(
            "print() cannot be called in element functions",
            "kernels cannot do I/O; return the value and inspect the result array",
        )
    if not callable(obj):
        kind = type(obj).__name__
        hint = "index arrays with a[i], not a(i)" if isinstance(obj, np.ndarray) else ""
        return unresolved(
            f"'{name}' is a captured {kind} value, not a function", hint or ALLOWED_CALLS_HINT
        )
    return unresolved(f"'{name}' is not an allowed function in element functions")


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def _short(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_numpy_allocator(obj: Any) -> bool:
    return any(getattr(np, n, None) is obj for n in NUMPY_ALLOCATORS)


def _is_library(fn: types.FunctionType) -> bool:
    """A function of numpy, the standard library or another known library (``LIBRARY_ROOTS``):
    not a helper. Where it is installed does not matter."""
    root = (fn.__module__ or "").split(".")[0]
    return root in LIBRARY_ROOTS or root in sys.stdlib_module_names


def check_calls(ctx: FunctionContext, calls: list[ResolvedCall]) -> list[Diagnostic]:
    """``UnresolvedCall`` for unresolvable calls and undefined names; ``UnsupportedSyntax``
    for keyword arguments and wrong argument counts of intrinsics."""
    src = ctx.src
    out: list[Diagnostic] = []
    callees: set[int] = set()
    for call in calls:
        callees.add(id(_root(call.node.func)))
        if call.kind is CallKind.UNRESOLVED:
            out.append(Diagnostic(call.reason, src.span(call.node), RULE, call.hint))
        elif call.kind is CallKind.INTRINSIC and call.intrinsic is not None:
            out.extend(_check_intrinsic_args(ctx, call, call.intrinsic))
    for node in ctx.nodes:
        if (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and id(node) not in callees
            and node.id not in ctx.locals
            and node.id not in ctx.reported
            and src.lookup(node.id) is MISSING
        ):
            out.append(
                Diagnostic(
                    f"name '{node.id}' is not defined",
                    src.span(node),
                    RULE,
                    "define it at module level or assign it before use",
                )
            )
    return out


def _check_intrinsic_args(
    ctx: FunctionContext, call: ResolvedCall, intrinsic: Intrinsic
) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for kw in call.node.keywords:
        if (intrinsic.name, kw.arg) in KEYWORDS:
            continue
        if intrinsic.kind == "local" and kw.arg == "dtype":
            continue  # np.zeros(K, dtype=...): the frontend reads it
        if kw.arg is not None:  # **kwargs is reported by the syntax analysis
            out.append(
                Diagnostic(
                    f"keyword arguments to '{call.name}' are not supported",
                    ctx.src.span(kw),
                    UnsupportedSyntax.rule,
                    "pass the arguments by position",
                )
            )
    if any(isinstance(a, ast.Starred) for a in call.node.args):
        return out  # reported by the syntax analysis
    lo, hi = intrinsic.arity
    n = len(call.node.args)
    if not lo <= n <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        out.append(
            Diagnostic(
                f"'{call.name}' takes {want} argument(s) in element functions, got {n}",
                ctx.src.span(call.node),
                UnsupportedSyntax.rule,
                "min and max take one sequence or two to eight values"
                if intrinsic.name in ("min", "max")
                else "check the call's arguments",
            )
        )
    return out
