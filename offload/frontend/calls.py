"""Lowering of calls: builtins, ``math.*``, NumPy ufuncs and scalar types (the intrinsics
of intrinsics.py), helpers (inlined by inline.py) and the element getter of a delayed
array (tree.py)."""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass, replace

import numpy as np

from offload.diagnostics import TypeMismatch, UnresolvedCall
from offload.frontend import typeinfo
from offload.frontend.arith import Arith
from offload.frontend.core import ExprHandler, LoweringCore
from offload.frontend.expr import CONVERSIONS, Exprs
from offload.frontend.inline import Inliner
from offload.frontend.intrinsics import Intrinsic, lookup_intrinsic
from offload.frontend.isclose import DEFAULTS, KEYWORDS, isclose
from offload.frontend.library import Library
from offload.frontend.local_arrays import LocalArrays
from offload.frontend.optables import OPCODES
from offload.frontend.promote import call_result, describe_key, join
from offload.frontend.reductions import Reductions
from offload.frontend.sequence_reductions import SequenceReductions
from offload.frontend.tree import TreeLowering
from offload.frontend.values import (
    ArrayRef,
    BoundMethod,
    Elementwise,
    Getter,
    LocalArray,
    PyObj,
    Scalar,
    TupleVal,
    Val,
    View,
    describe,
)
from offload.ir.ops import MATH_FUNCTIONS, Opcode
from offload.ir.types import BOOL, F64, I64, ScalarType, scalar_of_dtype

_UFUNC_BINARY = {
    "power": "pow",
    "floor_divide": "floordiv",
    "remainder": "mod",
    "mod": "mod",
}
_LOOP_ONLY = frozenset({"range", "zip", "enumerate", "reversed"})
"""Builtins that only make sense as what a for loop iterates (frontend/loops.py)."""
_ROUNDING = frozenset({"floor", "ceil", "trunc"})
"""Ufuncs NumPy 2 applies to a bool or integer exactly, keeping its type."""


@dataclass(frozen=True)
class Calls:
    """``f(...)`` for every kind of callable an element function may use."""

    core: LoweringCore
    arith: Arith
    exprs: Exprs
    inliner: Inliner
    tree: TreeLowering

    def handlers(self) -> dict[type[ast.expr], ExprHandler]:
        return {ast.Call: self.call}

    def call(self, node: ast.Call) -> Val:
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.core.unsupported(a, "'*args' in calls")
        for kw in node.keywords:
            if kw.arg is None:
                raise self.core.unsupported(kw.value, "'**kwargs' in calls")
        func = self.core.expr(node.func)
        if isinstance(func, BoundMethod) and func.name in CONVERSIONS:
            return self.conversion(func, node)
        ddof, node = self._ddof(func, node)
        if isinstance(func, BoundMethod):  # row.sum(), u.dot(v)
            if node.keywords:
                raise self.core.unsupported(
                    node.keywords[0].value, f"keyword arguments to '.{func.name}()'"
                )
            want = 1 if func.name == "dot" else 0
            if len(node.args) != want:
                raise self.core.error(
                    TypeMismatch,
                    f"'.{func.name}()' takes {want} argument{'s' if want != 1 else ''} here",
                    node,
                )
            args = [func.receiver, *(self.core.expr(a) for a in node.args), *ddof]
            self.core.at(node)
            return Reductions(self.core, self.arith).reduce(func.name, args, node)
        if isinstance(func, Getter):
            if node.keywords:
                raise self.core.unsupported(node, "keyword arguments to an element getter")
            return self.tree.call_getter(func, [self.core.expr(a) for a in node.args], node)
        if not isinstance(func, PyObj):
            raise self.core.error(TypeMismatch, f"a {describe(func)} is not callable", node.func)
        intrinsic = lookup_intrinsic(func.obj)
        if intrinsic is not None and intrinsic.kind == "local":
            local = LocalArrays(self.core, self.arith, self.exprs.names)
            return local.construct(intrinsic.name, func, node)
        if intrinsic is not None:
            node = _keywords_positional(intrinsic, node)
            if node.keywords:
                raise self.core.unsupported(
                    node.keywords[0].value, f"keyword arguments to '{func.name}'"
                )
            lo, hi = intrinsic.arity
            if not lo <= len(node.args) <= hi and intrinsic.name not in ("min", "max"):
                raise self.core.error(
                    TypeMismatch,
                    f"'{func.name}' takes {_count(lo, hi)} argument{'s' if hi != 1 else ''}"
                    f" here, {len(node.args)} given",
                    node,
                )
            if intrinsic.kind == "builtin" and intrinsic.name in _LOOP_ONLY:
                raise self.core.unsupported(
                    node, f"{intrinsic.name}() outside a for loop header", "loop over it"
                )
            args = [self.core.expr(a) for a in node.args]
            self.core.at(node)
            if ddof:
                return Reductions(self.core, self.arith).reduce(
                    intrinsic.name, [*args, *ddof], node
                )
            return self.call_intrinsic(intrinsic, func, args, node)
        if isinstance(func.obj, types.FunctionType):
            args = [self.core.expr(a) for a in node.args]
            kwargs = {str(kw.arg): self.core.expr(kw.value) for kw in node.keywords}
            return self.inliner.inline(func.obj, func.path, args, kwargs, node)
        raise self.core.error(
            UnresolvedCall,
            f"cannot call '{func.name}' in an element function",
            node.func,
            hint="element functions may call math.*, NumPy scalar functions, the builtins "
            "min/max/abs/int/float/bool/round/len/divmod/pow and plain Python functions",
        )

    # -- intrinsics --------------------------------------------------------------------

    def call_intrinsic(self, intr: Intrinsic, func: PyObj, args: list[Val], node: ast.Call) -> Val:
        if intr.kind == "reduce":
            return Reductions(self.core, self.arith).reduce(intr.name, args, node)
        if intr.kind in ("ufunc", "dtype") and any(
            isinstance(a, View | Elementwise | LocalArray) for a in args
        ):
            return self._elementwise(intr, func, args, node)
        if intr.kind == "builtin":
            return self._builtin(intr.name, args, node)
        if intr.kind == "typeinfo":
            return typeinfo.make(self.core, intr.name, args[0], node)
        if intr.kind == "isclose":
            operands = [self.core.scalar(a, n) for a, n in zip(args, node.args, strict=True)]
            self.core.at(node)
            return isclose(self.core, self.arith, operands, node)
        scalars = [self.core.scalar(a, n) for a, n in zip(args, node.args, strict=True)]
        self.core.at(node)
        if intr.kind == "math":
            xs = [self.core.convert(s, F64, True).value for s in scalars]
            if intr.name == "pow":
                return Scalar(self.core.b.binary(Opcode.POW, xs[0], xs[1]), True)
            if intr.name in ("degrees", "radians"):
                return Library(self.core, self.arith).lower_math(intr.name, scalars[0])
            r = self.core.b.math(intr.name, xs)
            return Scalar(r, True)
        if intr.kind == "dtype":
            t = scalar_of_dtype(intr.name)
            assert t is not None
            s = scalars[0]
            if t.is_bool:
                return replace(self.core.truth(s, node), weak=False)
            if t.is_int and s.type.is_float:
                return Scalar(self.core.b.cast(s.value, t), False)
            return self.core.convert(s, t, False)
        return self._ufunc(intr, func, scalars, node)

    def _elementwise(self, intr: Intrinsic, func: PyObj, args: list[Val], node: ast.Call) -> Val:
        """A NumPy function applied to a view: lowered element by element where read."""
        views = self.exprs.views
        args = [views.local(a) if isinstance(a, LocalArray) else a for a in args]
        keys = [
            views.key(a) if isinstance(a, View | Elementwise) else _key(self.core.scalar(a, n))
            for a, n in zip(args, node.args, strict=True)
        ]
        key = call_result(func.obj, *keys) if intr.kind == "ufunc" else None
        if intr.kind == "dtype":
            t = scalar_of_dtype(intr.name)
            assert t is not None
            key = (t, False)
        if key is None:
            kinds = ", ".join(describe_key(k) for k in keys)
            raise self.core.error(
                TypeMismatch, f"'{func.name}' is not supported for ({kinds}) here", node
            )

        def element(xs: list[Scalar]) -> Scalar:
            return self.call_intrinsic(intr, func, list(xs), node)  # type: ignore[return-value]

        return views.map(args, key, element, node)

    def _builtin(self, name: str, args: list[Val], node: ast.Call) -> Val:
        if name in ("min", "max"):
            if len(args) == 1 and isinstance(args[0], TupleVal):
                args = list(args[0].items)
            elif len(args) == 1 and not isinstance(args[0], Scalar):
                return SequenceReductions(self.core, self.arith).python_extreme(name, args[0], node)
            if len(args) < 2:
                raise self.core.error(
                    TypeMismatch, f"{name}() needs at least two values here", node
                )
            return self._minmax(name, [self.core.scalar(a, node) for a in args], node)
        if name == "len":
            (a,) = args
            if isinstance(a, TupleVal):
                return self.core.const(len(a.items), (I64, True))
            if isinstance(a, ArrayRef) and a.type.ndim > 0:
                return self.exprs.shape(a, 0)
            if isinstance(a, View | Elementwise):
                return self.exprs.views.lengths(a)[0]
            if isinstance(a, LocalArray):
                return LocalArrays(self.core, self.arith, self.exprs.names).length(a)
            raise self.core.error(TypeMismatch, f"len() of a {describe(a)}", node)
        if name == "sum":
            return SequenceReductions(self.core, self.arith).python_sum(args, node)
        if name in ("divmod", "pow"):
            x, y = (self.core.scalar(a, n) for a, n in zip(args, node.args, strict=True))
            if name == "pow":
                return self.arith.binop("pow", x, y, node)
            return TupleVal(
                (self.arith.binop("floordiv", x, y, node), self.arith.binop("mod", x, y, node))
            )
        if name == "round" and len(args) == 2:
            return self._round_to(args, node)
        (s,) = (self.core.scalar(a, n) for a, n in zip(args, node.args, strict=True))
        if name == "abs":
            return self.arith.unary("abs", s, node)
        if name == "float":
            return self.core.convert(s, F64, True)
        if name == "bool":
            return replace(self.core.truth(s, node), weak=True)
        if name in ("int", "round", "math.floor", "math.ceil", "math.trunc"):
            if not s.type.is_float:
                return self.core.convert(s, I64, True)
            fn = {"int": None, "round": "rint", "math.floor": "floor"}.get(name, name[5:])
            rounded = s.value if fn is None else self.core.b.math(fn, [s.value])
            return Scalar(self.core.b.cast(rounded, I64), True)
        raise self.core.unsupported(node, f"the builtin '{name}'")

    def _ddof(self, func: Val, node: ast.Call) -> tuple[list[Val], ast.Call]:
        """``np.var(x, ddof=k)``, ``x.std(ddof=k)``: ``[k]`` and the call without it (only
        a keyword: NumPy's second positional argument is the axis)."""
        name = func.name if isinstance(func, BoundMethod | PyObj) else ""
        if isinstance(func, PyObj):
            intrinsic = lookup_intrinsic(func.obj)
            name = intrinsic.name if intrinsic is not None and intrinsic.kind == "reduce" else ""
        if name not in ("var", "std") or [kw.arg for kw in node.keywords] != ["ddof"]:
            return [], node
        ddof = self.core.expr(node.keywords[0].value)
        call = ast.copy_location(ast.Call(func=node.func, args=node.args, keywords=[]), node)
        return [ddof], call

    def conversion(self, method: BoundMethod, node: ast.Call) -> Val:
        """``x.item()`` of a NumPy scalar (the Python number: ``float``, ``int`` as ``int(x)``,
        ``bool``) and ``x.astype(t)`` of a scalar, view or expression (as ``t(x)``)."""
        name, want = method.name, (0 if method.name == "item" else 1)
        if node.keywords or len(node.args) != want:
            raise self.core.error(
                TypeMismatch,
                f"'.{name}()' takes {want} positional argument{'s' if want != 1 else ''} here",
                node,
                hint="x.astype(np.float64)" if name == "astype" else "x.item()",
            )
        x = method.receiver
        if name == "item":
            assert isinstance(x, Scalar)
            t = x.type
            return self.core.convert(x, F64 if t.is_float else BOOL if t.is_bool else I64, True)
        target = self.core.expr(node.args[0])
        intrinsic = None
        if isinstance(target, PyObj):
            kind = target.obj if isinstance(target.obj, type) else _scalar_type(target.obj)
            intrinsic = lookup_intrinsic(kind) if kind is not None else None
        if intrinsic is None or intrinsic.kind != "dtype":
            raise self.core.error(
                TypeMismatch,
                f"'.astype()' takes a NumPy scalar type or dtype here, not {describe(target)}",
                node.args[0],
            )
        assert isinstance(target, PyObj) and isinstance(node.func, ast.Attribute)
        if isinstance(x, ArrayRef) and x.type.ndim > 0:  # (the whole array, as a view)
            x = self.exprs.views.full(x)
        call = ast.copy_location(
            ast.Call(func=node.func, args=[node.func.value], keywords=[]), node
        )
        return self.call_intrinsic(intrinsic, target, [x], call)

    def _round_to(self, args: list[Val], node: ast.Call) -> Val:
        """``round(x, n)``: a NumPy scalar ``x`` rounds as ``np.round(x, n)`` does (its
        ``__round__``); CPython rounds a Python float decimally (correctly rounded), which
        offload does not, so that is a located error."""
        x, d = (self.core.scalar(a, n) for a, n in zip(args, node.args, strict=True))
        if x.weak:
            raise self.core.unsupported(
                node,
                "round(x, n) of a Python number (CPython rounds it in decimal)",
                "np.round(x, n) rounds as NumPy does, or round a NumPy value such as x[i]",
            )
        return Library(self.core, self.arith).round_to(x, d, x.type, node)

    def _minmax(self, name: str, xs: list[Scalar], node: ast.AST) -> Scalar:
        key = join(*((s.type, s.weak) for s in xs))
        if key is None:
            kinds = ", ".join(describe_key((s.type, s.weak)) for s in xs)
            raise self.core.error(
                TypeMismatch, f"{name}() of values that do not combine: {kinds}", node
            )
        conv = [self.core.convert(s, key[0], key[1]) for s in xs]
        opcode = Opcode.MIN if name == "min" else Opcode.MAX
        acc = conv[0].value
        for s in conv[1:]:  # Python's min/max fold from the left
            acc = self.core.b.binary(opcode, acc, s.value)
        nonneg = all(s.nonneg for s in xs) if name == "min" else any(s.nonneg for s in xs)
        return Scalar(acc, key[1], None, nonneg and key[0].is_int)

    def _ufunc(self, intr: Intrinsic, func: PyObj, xs: list[Scalar], node: ast.Call) -> Val:
        keys = [(s.type, s.weak) for s in xs]
        key = call_result(func.obj, *keys)
        if key is None:
            kinds = ", ".join(describe_key(k) for k in keys)
            raise self.core.error(
                TypeMismatch, f"'{func.name}' is not supported for ({kinds}) here", node
            )
        rt = key[0]
        name = intr.name
        lowered = Library(self.core, self.arith).lower(name, xs, rt, node)
        if lowered is not None:
            return lowered
        if name in MATH_FUNCTIONS:
            if name in _ROUNDING and not xs[0].type.is_float:
                return self.core.convert(xs[0], rt, False)  # NumPy 2: exact, same type
            if rt.is_float:
                return Scalar(
                    self.core.b.math(name, [self.core.convert(s, rt).value for s in xs]), False
                )
            if rt.is_bool:
                ops = [self.core.convert(s, s.type if s.type.is_float else F64).value for s in xs]
                return Scalar(self.core.b.math(name, ops), False)
            raise self.core.unsupported(node, f"'{func.name}' of {describe_key(keys[0])}")
        if name == "where":
            cond = self.core.truth(xs[0], node)
            a = self.core.convert(xs[1], rt, False).value
            b = self.core.convert(xs[2], rt, False).value
            return Scalar(self.core.b.select(cond.value, a, b), False)
        conv = [self.core.convert(s, rt, False) for s in xs]
        vals = [c.value for c in conv]
        if name in ("abs", "absolute"):
            return conv[0] if rt.is_bool else Scalar(self.core.b.unary(Opcode.ABS, vals[0]), False)
        if name == "negative":
            return Scalar(self.core.b.unary(Opcode.NEG, vals[0]), False)
        if name == "square":
            opcode = Opcode.AND if rt.is_bool else Opcode.MUL
            return Scalar(self.core.b.binary(opcode, vals[0], vals[0]), False)
        if name == "power":
            self.arith.check_int_power(xs[0], xs[1], rt, node, f"{func.name}()")
        if name in _UFUNC_BINARY:
            return Scalar(self.core.b.binary(OPCODES[_UFUNC_BINARY[name]], vals[0], vals[1]), False)
        if name in ("minimum", "maximum"):
            opcode = Opcode.MIN if name == "minimum" else Opcode.MAX
            m = self.core.b.binary(opcode, vals[0], vals[1])
            if rt.is_float:  # NumPy propagates NaN from either side
                for v in (vals[1], vals[0]):
                    m = self.core.b.select(self.core.b.binary(Opcode.NE, v, v), v, m)
            return Scalar(m, False)
        if name == "sign":
            x = vals[0]
            zero = self.core.b.const(0, rt)
            other = x
            if rt.is_float:  # NumPy: sign(-0.0) is +0.0 (and sign(nan) is nan)
                other = self.core.b.select(self.core.b.binary(Opcode.EQ, x, zero), zero, x)
            res = self.core.b.select(
                self.core.b.binary(Opcode.GT, x, zero), self.core.b.const(1, rt), other
            )
            if rt.is_float or rt.is_signed:
                neg = self.core.b.binary(Opcode.LT, x, zero)
                res = self.core.b.select(neg, self.core.b.const(-1, rt), res)
            return Scalar(res, False)
        raise self.core.unsupported(node, f"'{func.name}'")


def _key(s: Scalar) -> tuple[ScalarType, bool]:
    return (s.type, s.weak)


def _count(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo} to {hi}"


def _keywords_positional(intrinsic: Intrinsic, node: ast.Call) -> ast.Call:
    """``np.round(x, decimals=n)``, ``round(x, ndigits=n)`` and ``np.isclose(a, b, atol=t)``
    (its keywords in any order) as their positional form, defaults filled in."""
    if not node.keywords:
        return node
    names: tuple[str, ...]
    defaults: tuple[float | bool, ...]
    if intrinsic.kind == "isclose":
        names, defaults, first = KEYWORDS, DEFAULTS, 2
    elif intrinsic.name in ("round", "around"):
        names = ("ndigits",) if intrinsic.kind == "builtin" else ("decimals",)
        defaults, first = (0,), 1
    else:
        return node
    given = {kw.arg: kw.value for kw in node.keywords}
    if len(node.args) != first or any(k not in names for k in given):
        return node  # (reported as keyword arguments the call does not take)
    last = max(names.index(str(k)) for k in given)
    args = [*node.args]
    for k in range(last + 1):
        value = given.get(names[k])
        args.append(
            value if value is not None else ast.copy_location(ast.Constant(defaults[k]), node)
        )
    return ast.copy_location(ast.Call(func=node.func, args=args, keywords=[]), node)


def _scalar_type(obj: object) -> type | None:
    """The NumPy scalar type of a dtype-like object (``np.dtype("float32")``), else ``None``."""
    if isinstance(obj, np.dtype):
        kind: type = obj.type
        return kind
    return None
