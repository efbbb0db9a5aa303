"""The syntax allowlist: every AST node of an element function must be one of the subset's.

Deny by default (STYLE rule 10): a node type that is neither allowed here nor owned by
another analysis (allocation, writes) is reported as ``UnsupportedSyntax`` at that node,
with a message and hint from ``_UNSUPPORTED`` when the construct is a common one.
"""

from __future__ import annotations

import ast

from offload.analysis.walk import FunctionContext, keyword_span
from offload.diagnostics import Diagnostic, Span, UnsupportedSyntax

RULE = UnsupportedSyntax.rule

ALLOWED: tuple[type[ast.AST], ...] = (
    # statements
    ast.Return, ast.Assign, ast.AugAssign, ast.For, ast.While, ast.If, ast.Break,
    ast.Continue, ast.Pass, ast.Expr,
    # expressions
    ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Compare, ast.Call, ast.Constant,
    ast.Attribute, ast.Subscript, ast.Name, ast.Tuple, ast.keyword, ast.Slice,
    # contexts and operators
    ast.Load, ast.Store, ast.And, ast.Or, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv,
    ast.Mod, ast.Pow, ast.LShift, ast.RShift, ast.BitOr, ast.BitXor, ast.BitAnd, ast.Invert,
    ast.Not, ast.UAdd, ast.USub, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
    ast.MatMult,
)  # fmt: skip

OWNED_ELSEWHERE: tuple[type[ast.AST], ...] = (
    # allocation.py
    ast.List, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
    ast.JoinedStr, ast.FormattedValue, ast.Lambda,
    # writes.py
    ast.Global, ast.Nonlocal,
    # operators without a position: reported at their expression (check_allowed)
    ast.Is, ast.IsNot, ast.In, ast.NotIn,
)  # fmt: skip

_NO_EXCEPTIONS = "kernels cannot raise or catch exceptions; test the condition with if/else"
_UNSUPPORTED: dict[type[ast.AST], tuple[str, str, str]] = {
    # node type -> (message, hint, keyword the caret covers or "" for the whole node)
    ast.Try: ("try statements are not supported in element functions", _NO_EXCEPTIONS, "try"),
    ast.TryStar: ("try statements are not supported in element functions", _NO_EXCEPTIONS, "try"),
    ast.Raise: ("raise is not supported in element functions",
                "kernels cannot raise exceptions; return a sentinel value such as NaN instead",
                ""),
    ast.Assert: ("assert is not supported in element functions",
                 "check the inputs before calling compute_*, or return a sentinel value", ""),
    ast.With: ("with statements are not supported in element functions",
               "move the with block outside the element function", "with"),
    ast.AsyncWith: ("async code is not supported in element functions",
                    "element functions are plain synchronous functions", "async with"),
    ast.AsyncFor: ("async code is not supported in element functions",
                   "element functions are plain synchronous functions", "async for"),
    ast.AsyncFunctionDef: ("async functions are not supported in element functions",
                           "element functions are plain synchronous functions", "async def"),
    ast.Await: ("await is not supported in element functions",
                "element functions are plain synchronous functions", ""),
    ast.Yield: ("yield is not supported in element functions",
                "an element function returns one value per index; return it", ""),
    ast.YieldFrom: ("yield is not supported in element functions",
                    "an element function returns one value per index; return it", ""),
    ast.Delete: ("del is not supported in element functions",
                 "remove the del statement; locals end with the call", ""),
    ast.Import: ("imports are not allowed inside element functions",
                 "import the module at module level", ""),
    ast.ImportFrom: ("imports are not allowed inside element functions",
                     "import the module at module level", ""),
    ast.ClassDef: ("class definitions are not allowed in element functions",
                   "define the class outside; element functions compute scalars only", "class"),
    ast.Match: ("match statements are not supported in element functions",
                "use if/elif/else", "match"),
    ast.NamedExpr: ("assignment expressions (:=) are not supported in element functions",
                    "assign the value in a separate statement first", ""),
    ast.Starred: ("star-arguments are not supported in element functions",
                  "pass a fixed number of arguments one by one", ""),
    ast.AnnAssign: ("annotated assignments are not supported in element functions",
                    "drop the annotation: write 'x = value'", ""),
}  # fmt: skip

_COMPARE_OPS: dict[type[ast.cmpop], str] = {
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}


def check_syntax(ctx: FunctionContext) -> list[Diagnostic]:
    """``UnsupportedSyntax`` diagnostics for every node outside the subset."""
    checker = _SyntaxChecker(ctx)
    checker.check_signature()
    for node in ctx.nodes:
        checker.visit(node)
    return checker.diagnostics


class _SyntaxChecker:
    def __init__(self, ctx: FunctionContext) -> None:
        self.ctx = ctx
        self.src = ctx.src
        self.diagnostics: list[Diagnostic] = []
        self.handled: set[int] = set()  # ids of nodes already reported through a parent

    def report(self, span: Span, message: str, hint: str) -> None:
        self.diagnostics.append(Diagnostic(message, span, RULE, hint))

    def check_signature(self) -> None:
        args = self.src.node.args
        for arg in (args.vararg, args.kwarg):
            if arg is not None:
                self.report(
                    keyword_span(self.src, arg, len(arg.arg)),
                    f"variadic parameter '{arg.arg}' is not supported in element functions",
                    "declare a fixed number of positional parameters",
                )
        for arg in args.kwonlyargs:
            self.report(
                keyword_span(self.src, arg, len(arg.arg)),
                f"keyword-only parameter '{arg.arg}' is not supported in element functions",
                "declare it as an ordinary positional parameter",
            )

    def visit(self, node: ast.AST) -> None:
        if id(node) in self.handled:
            return
        if isinstance(node, ast.List) and isinstance(node.ctx, ast.Store):
            self.report(
                self.src.span(node),
                "list unpacking targets are not supported in element functions",
                "unpack into a tuple: a, b = t",
            )
            return
        if isinstance(node, OWNED_ELSEWHERE):
            return
        if isinstance(node, ALLOWED):
            self.check_allowed(node)
            return
        if isinstance(node, ast.FunctionDef):
            self.report(
                keyword_span(self.src, node, len(f"def {node.name}")),
                f"nested function '{node.name}' is not supported in element functions",
                f"move '{node.name}' to module level; helpers are inlined into the kernel",
            )
            return
        if isinstance(node, ast.Starred) and isinstance(node.ctx, ast.Store):
            self.report(
                self.src.span(node),
                "starred assignment is not supported in element functions",
                "unpack a fixed number of names: a, b, c = t",
            )
            return
        entry = _UNSUPPORTED.get(type(node))
        if entry is None:
            name = type(node).__name__
            message = f"this construct ({name}) is not supported in element functions"
            hint = "element functions may use scalar arithmetic, tuples, if/for/while and calls"
            self.report(self.span_of(node), message, hint)
            return
        message, hint, keyword = entry
        if keyword == "class" and isinstance(node, ast.ClassDef):
            keyword = f"class {node.name}"
        span = keyword_span(self.src, node, len(keyword)) if keyword else self.span_of(node)
        self.report(span, message, hint)

    def span_of(self, node: ast.AST) -> Span:
        if hasattr(node, "lineno"):
            return self.src.span(node)
        return self.src.smap.def_span(self.src.node)

    def check_allowed(self, node: ast.AST) -> None:
        if isinstance(node, ast.Constant):
            self.check_constant(node)
        elif isinstance(node, ast.For):
            self.check_for(node)
        elif isinstance(node, ast.Compare):
            for op in node.ops:
                text = _COMPARE_OPS.get(type(op))
                if text is not None:
                    self.report(
                        self.src.span(node),
                        f"'{text}' comparisons are not supported in element functions",
                        "compare numbers with == != < <= > >=",
                    )
                    break
        elif isinstance(node, ast.Call) and self.calls_builtin(node, complex):
            # the most specific reason: not "constructing an object allocates"
            self.report(
                self.src.span(node),
                "complex numbers are not supported in element functions",
                "compute the real and imaginary parts as two floats (return a tuple)",
            )
        elif isinstance(node, ast.keyword) and node.arg is None:
            self.report(
                self.src.span(node),
                "**kwargs arguments are not supported in element functions",
                "pass the arguments one by one",
            )

    def calls_builtin(self, node: ast.Call, builtin: object) -> bool:
        func = node.func
        return (
            isinstance(func, ast.Name)
            and func.id not in self.ctx.locals
            and self.src.lookup(func.id) is builtin
        )

    def check_constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, bool | int | float | str | bytes):
            return  # strings and bytes are reported by the allocation analysis
        kind = {type(None): "None is", complex: "complex numbers are"}.get(
            type(value), f"{value!r} is"
        )
        self.report(
            self.src.span(node),
            f"{kind} not supported in element functions",
            "element functions compute with int, float and bool values and tuples of them",
        )

    def check_for(self, node: ast.For) -> None:
        # What is iterated (range, a view, zip, enumerate, reversed) is the frontend's to
        # check: it knows the iterable's value. The target must be names.
        if not _names_only(node.target):
            self.report(
                self.src.span(node.target),
                "the variable of a for loop must be a name or a tuple of names",
                "write 'for x in row:' or 'for k, x in enumerate(row):'",
            )


def _names_only(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):
        return True
    return isinstance(target, ast.Tuple) and all(_names_only(t) for t in target.elts)
