"""Lowering of calls: builtins, ``math.*``, NumPy ufuncs and scalar types, and helpers.

Helpers (plain Python functions and lambdas) are inlined at each call site, specialised by
the argument values; their ops keep their own source spans, and an error inside a helper
carries a note pointing at the call site.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from offload.diagnostics import (
    Note,
    OffloadError,
    RecursionNotAllowed,
    Span,
    TypeMismatch,
    UnresolvedCall,
    UnsupportedSyntax,
)
from offload.frontend.base import RESULT, FunctionContext
from offload.frontend.expr import ExprLowerer
from offload.frontend.intrinsics import Intrinsic, lookup_intrinsic
from offload.frontend.promote import call_result, describe_key, join
from offload.frontend.source import get_source
from offload.frontend.values import ArrayRef, Getter, PyObj, Scalar, Step, TupleVal, Val, describe
from offload.ir.ops import MATH_FUNCTIONS, Opcode
from offload.ir.types import BOOL, F64, I64, scalar_of_dtype

_UFUNC_BINARY = {
    "power": "pow",
    "floor_divide": "floordiv",
    "remainder": "mod",
    "mod": "mod",
}


class CallLowerer(ExprLowerer):
    """``f(...)`` for every kind of callable an element function may use."""

    def expr_Call(self, node: ast.Call) -> Val:
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.unsupported(a, "'*args' in calls")
        for kw in node.keywords:
            if kw.arg is None:
                raise self.unsupported(kw.value, "'**kwargs' in calls")
        func = self.expr(node.func)
        if isinstance(func, Getter):
            if node.keywords:
                raise self.unsupported(node, "keyword arguments to an element getter")
            return self.call_getter(func, [self.expr(a) for a in node.args], node)
        if not isinstance(func, PyObj):
            raise self.error(TypeMismatch, f"a {describe(func)} is not callable", node.func)
        intrinsic = lookup_intrinsic(func.obj)
        if intrinsic is not None:
            if node.keywords:
                raise self.unsupported(
                    node.keywords[0].value, f"keyword arguments to '{func.name}'"
                )
            lo, hi = intrinsic.arity
            if not lo <= len(node.args) <= hi and intrinsic.name not in ("min", "max"):
                raise self.error(
                    TypeMismatch,
                    f"'{func.name}' takes {_count(lo, hi)} argument{'s' if hi != 1 else ''}"
                    f" here, {len(node.args)} given",
                    node,
                )
            if intrinsic.kind == "builtin" and intrinsic.name == "range":
                raise self.unsupported(node, "range() outside a for loop header")
            args = [self.expr(a) for a in node.args]
            self.at(node)
            return self.call_intrinsic(intrinsic, func, args, node)
        if isinstance(func.obj, types.FunctionType):
            args = [self.expr(a) for a in node.args]
            kwargs = {str(kw.arg): self.expr(kw.value) for kw in node.keywords}
            return self.inline(func.obj, func.path, args, kwargs, node)
        raise self.error(
            UnresolvedCall,
            f"cannot call '{func.name}' in an element function",
            node.func,
            hint="element functions may call math.*, NumPy scalar functions, the builtins "
            "min/max/abs/int/float/bool/round/len/divmod/pow and plain Python functions",
        )

    def call_getter(self, getter: Getter, args: list[Val], node: ast.AST) -> Val:
        raise self.unsupported(node, "an element getter")

    # -- intrinsics --------------------------------------------------------------------

    def call_intrinsic(self, intr: Intrinsic, func: PyObj, args: list[Val], node: ast.Call) -> Val:
        if intr.kind == "builtin":
            return self._builtin(intr.name, args, node)
        scalars = [self.scalar(a, n) for a, n in zip(args, node.args, strict=True)]
        self.at(node)
        if intr.kind == "math":
            xs = [self.convert(s, F64, True).value for s in scalars]
            if intr.name == "pow":
                return Scalar(self.b.binary(Opcode.POW, xs[0], xs[1]), True)
            r = self.b.math(intr.name, xs)
            return Scalar(r, True)
        if intr.kind == "dtype":
            t = scalar_of_dtype(intr.name)
            assert t is not None
            s = scalars[0]
            if t.is_bool:
                return replace(self.truth(s, node), weak=False)
            if t.is_int and s.type.is_float:
                return Scalar(self.b.cast(s.value, t), False)
            return self.convert(s, t, False)
        return self._ufunc(intr, func, scalars, node)

    def _builtin(self, name: str, args: list[Val], node: ast.Call) -> Val:
        if name in ("min", "max"):
            if len(args) == 1 and isinstance(args[0], TupleVal):
                args = list(args[0].items)
            if len(args) < 2:
                raise self.error(TypeMismatch, f"{name}() needs at least two values here", node)
            return self._minmax(name, [self.scalar(a, node) for a in args], node)
        if name == "len":
            (a,) = args
            if isinstance(a, TupleVal):
                return self.const(len(a.items), (I64, True))
            if isinstance(a, ArrayRef) and a.type.ndim > 0:
                return self.shape(a, 0)
            raise self.error(TypeMismatch, f"len() of a {describe(a)}", node)
        if name in ("divmod", "pow"):
            x, y = (self.scalar(a, n) for a, n in zip(args, node.args, strict=True))
            if name == "pow":
                return self.binop("pow", x, y, node)
            return TupleVal((self.binop("floordiv", x, y, node), self.binop("mod", x, y, node)))
        (s,) = (self.scalar(a, n) for a, n in zip(args, node.args, strict=True))
        if name == "abs":
            return self.unary("abs", s, node)
        if name == "float":
            return self.convert(s, F64, True)
        if name == "bool":
            return replace(self.truth(s, node), weak=True)
        if name in ("int", "round", "math.floor", "math.ceil", "math.trunc"):
            if not s.type.is_float:
                return self.convert(s, I64, True)
            fn = {"int": None, "round": "rint", "math.floor": "floor"}.get(name, name[5:])
            rounded = s.value if fn is None else self.b.math(fn, [s.value])
            return Scalar(self.b.cast(rounded, I64), True)
        raise self.unsupported(node, f"the builtin '{name}'")

    def _minmax(self, name: str, xs: list[Scalar], node: ast.AST) -> Scalar:
        key = join(*((s.type, s.weak) for s in xs))
        if key is None:
            kinds = ", ".join(describe_key((s.type, s.weak)) for s in xs)
            raise self.error(TypeMismatch, f"{name}() of values that do not combine: {kinds}", node)
        conv = [self.convert(s, key[0], key[1]) for s in xs]
        opcode = Opcode.MIN if name == "min" else Opcode.MAX
        acc = conv[0].value
        for s in conv[1:]:  # Python's min/max fold from the left
            acc = self.b.binary(opcode, acc, s.value)
        nonneg = all(s.nonneg for s in xs) if name == "min" else any(s.nonneg for s in xs)
        return Scalar(acc, key[1], None, nonneg and key[0].is_int)

    def _ufunc(self, intr: Intrinsic, func: PyObj, xs: list[Scalar], node: ast.Call) -> Val:
        keys = [(s.type, s.weak) for s in xs]
        key = call_result(func.obj, *keys)
        if key is None:
            kinds = ", ".join(describe_key(k) for k in keys)
            raise self.error(
                TypeMismatch, f"'{func.name}' is not supported for ({kinds}) here", node
            )
        rt = key[0]
        name = intr.name
        if name in MATH_FUNCTIONS:
            if rt.is_float:
                return Scalar(self.b.math(name, [self.convert(s, rt).value for s in xs]), False)
            if rt.is_bool:
                ops = [self.convert(s, s.type if s.type.is_float else F64).value for s in xs]
                return Scalar(self.b.math(name, ops), False)
            return self.convert(xs[0], rt, False)  # floor/ceil/trunc/rint of an int
        if name == "where":
            cond = self.truth(xs[0], node)
            a = self.convert(xs[1], rt, False).value
            b = self.convert(xs[2], rt, False).value
            return Scalar(self.b.select(cond.value, a, b), False)
        conv = [self.convert(s, rt, False) for s in xs]
        vals = [c.value for c in conv]
        if name in ("abs", "absolute"):
            return conv[0] if rt.is_bool else Scalar(self.b.unary(Opcode.ABS, vals[0]), False)
        if name == "negative":
            return Scalar(self.b.unary(Opcode.NEG, vals[0]), False)
        if name == "square":
            opcode = Opcode.AND if rt.is_bool else Opcode.MUL
            return Scalar(self.b.binary(opcode, vals[0], vals[0]), False)
        if name in _UFUNC_BINARY:
            return Scalar(self.b.binary(_opcode(_UFUNC_BINARY[name]), vals[0], vals[1]), False)
        if name in ("minimum", "maximum"):
            opcode = Opcode.MIN if name == "minimum" else Opcode.MAX
            m = self.b.binary(opcode, vals[0], vals[1])
            if rt.is_float:  # NumPy propagates NaN from either side
                for v in (vals[1], vals[0]):
                    m = self.b.select(self.b.binary(Opcode.NE, v, v), v, m)
            return Scalar(m, False)
        if name == "sign":
            x = vals[0]
            zero = self.b.const(0, rt)
            res = self.b.select(self.b.binary(Opcode.GT, x, zero), self.b.const(1, rt), x)
            if rt.is_float or rt.is_signed:
                neg = self.b.binary(Opcode.LT, x, zero)
                res = self.b.select(neg, self.b.const(-1, rt), res)
            return Scalar(res, False)
        raise self.unsupported(node, f"'{func.name}'")

    # -- helpers -----------------------------------------------------------------------

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
        call_span = None if node is None else self.span(node)
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
        if code in self.inline_stack:
            where = self.span(node) if node is not None else None
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
        saved_ctx, saved_span = self.save_context(), self.b.span
        self.ctx = ctx
        self.inline_stack.append(code)
        try:
            if isinstance(fnode, ast.Lambda):
                value = self.expr(fnode.body)
                ctx.returns.append((self.b.block, {RESULT: value}))
                self.dead()
            else:
                self.stmts(fnode.body)
                if self.live:
                    raise TypeMismatch.at(
                        f"'{src.name}' can reach its end without returning a value",
                        src.smap.def_span(fnode),
                        hint="return a number (or a tuple) on every path",
                    )
            result = self.inline_returns(ctx.returns, fnode, f"'{src.name}'")
        finally:
            self.inline_stack.pop()
            self.restore_context(saved_ctx)
            self.b.span = saved_span
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
            bound[p] = self.const(d, key)
        if problem:
            where = self.span(node) if node is not None else None
            notes = (Note(f"'{fn.__name__}' is defined here", def_span),)
            raise TypeMismatch.at(f"'{fn.__name__}' {problem}", where, notes=notes)
        return bound


def _count(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo} to {hi}"


def _opcode(op: str) -> Opcode:
    from offload.frontend.optables import OPCODES

    return OPCODES[op]
