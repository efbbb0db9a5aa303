"""One IR op -> Python statements with the IR's exact semantics under numba typing.

Every statement keeps each value at its IR type in numba: integer results are cast back to
their width (numba computes small ints in int64), constants are typed, float32 stays
float32. Integer division and shifts never reach an undefined machine operation: the
divisor and the shift count are made safe first and the IR's result for the edge cases is
chosen with a select, so the code means the same under any numba error model (CPU and GPU).
A ``DIV``/``REM`` the optimiser marked ``nonneg`` divides unsigned (no sign fix-up); an
``ADD``/``SUB``/``MUL`` that ``narrow`` marked ``nsw`` goes through ``hooks.int_nsw``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

from offload.diagnostics import CompileError
from offload.emit.division import (
    Temps,
    constant_division,
    int_constant,
    int_division,
    negate,
    nonneg_constant_division,
    nonneg_division,
)
from offload.emit.hooks import EmitHooks
from offload.emit.template import assign, const, ctor, expr, name, wrap
from offload.ir.core import Op, Value
from offload.ir.ops import COMPARE, LOCAL_OPS, TILE_OPS, Opcode
from offload.ir.tile_ops import is_window
from offload.ir.types import BOOL, I32, ArrayType, LocalType, ScalarType, scalar_by_name

_PYOP = {
    Opcode.ADD: "+",
    Opcode.SUB: "-",
    Opcode.MUL: "*",
    Opcode.TRUEDIV: "/",
    Opcode.AND: "&",
    Opcode.OR: "|",
    Opcode.XOR: "^",
    Opcode.EQ: "==",
    Opcode.NE: "!=",
    Opcode.LT: "<",
    Opcode.LE: "<=",
    Opcode.GT: ">",
    Opcode.GE: ">=",
}


_DIVISIONS = (Opcode.FLOORDIV, Opcode.FLOORMOD, Opcode.DIV, Opcode.REM)


class OpContext:
    """What op emission needs from the surrounding function: value names and hooks."""

    def __init__(
        self,
        ref: Callable[[Value], ast.expr],
        result_name: Callable[[Value], str],
        capture_of: Callable[[Value], int],
        hooks: EmitHooks,
        constants: Mapping[Value, object] | None = None,
    ) -> None:
        self.ref = ref
        """The expression that reads a value (its variable, or a parameter)."""
        self.result_name = result_name
        """The variable an op's result is assigned to."""
        self.capture_of = capture_of
        """The capture index of an array-typed parameter."""
        self.hooks = hooks
        self.constants: Mapping[Value, object] = constants or {}
        """The value of each ``CONST`` op's result (divisions by a constant are emitted
        without branches: ``offload.emit.division``)."""


def emit_op(op: Op, cx: OpContext) -> list[ast.stmt]:
    """Statements that assign ``op``'s result to its variable."""
    out = cx.result_name(op.result)
    t = op.result.type
    ops = [cx.ref(v) for v in op.operands if not isinstance(v.type, ArrayType)]
    code = op.opcode
    tmp = Temps(out)
    if code is Opcode.LOAD:
        return _load(op, cx, out, ops, tmp)
    if code in TILE_OPS:
        return _tile_op(op, cx, out)
    if code in LOCAL_OPS:
        return _local_op(op, cx, out, tmp)
    if code is Opcode.SHAPE:
        return [assign(out, cx.hooks.shape(cx.capture_of(op.operands[0]), op.attrs["axis"]))]
    assert isinstance(t, ScalarType)
    if code is Opcode.CONST:
        return [assign(out, const(op.attrs["value"], t))]
    if code is Opcode.SELECT:
        return [assign(out, expr("a if c else b", c=ops[0], a=ops[1], b=ops[2]))]
    if code is Opcode.CAST:
        return [assign(out, _cast(ops[0], op.operands[0].type, t))]
    if code is Opcode.MATH:
        src = op.operands[0].type
        assert isinstance(src, ScalarType)
        return [assign(out, cx.hooks.math(op.attrs["fn"], ops, src))]
    if code in COMPARE:
        return [assign(out, ast.Compare(ops[0], [_cmp(code)], [ops[1]]))]
    if code is Opcode.MIN:
        return [assign(out, expr("b if b < a else a", a=ops[0], b=ops[1]))]
    if code is Opcode.MAX:
        return [assign(out, expr("b if b > a else a", a=ops[0], b=ops[1]))]
    if code is Opcode.NOT:
        return [assign(out, expr("not a", a=ops[0]))]
    if t.is_bool:
        if code in (Opcode.AND, Opcode.OR, Opcode.XOR):
            return [assign(out, _bin(code, ops[0], ops[1]))]
        raise CompileError(f"{code} on bool operands is not supported by the emitter")
    if t.is_float:
        return _float_op(code, ops, t, out, cx)
    c = int_constant(cx.constants, op.operands[1]) if code in _DIVISIONS else None
    if code in (Opcode.DIV, Opcode.REM) and op.attrs.get("nonneg") and t.is_signed:
        if c is not None:
            return nonneg_constant_division(code, ops[0], c, t, out=out)
        return nonneg_division(code, ops[0], ops[1], t, out=out, tmp=tmp)
    if c is not None:
        return constant_division(code, ops[0], c, t, out=out, tmp=tmp)
    if code in (Opcode.ADD, Opcode.SUB, Opcode.MUL) and op.attrs.get("nsw") and t.is_signed:
        # narrow proved it cannot overflow: the backend may say so (the GPU's ``nsw``).
        return [assign(out, cx.hooks.int_nsw(code, ops[0], ops[1], t))]
    return _int_op(code, ops, t, out, tmp)


def _cmp(code: Opcode) -> ast.cmpop:
    return {
        Opcode.EQ: ast.Eq(),
        Opcode.NE: ast.NotEq(),
        Opcode.LT: ast.Lt(),
        Opcode.LE: ast.LtE(),
        Opcode.GT: ast.Gt(),
        Opcode.GE: ast.GtE(),
    }[code]


def _bin(code: Opcode, a: ast.expr, b: ast.expr) -> ast.expr:
    return expr(f"a {_PYOP[code]} b", a=a, b=b)


def _wrapping(code: Opcode, a: ast.expr, b: ast.expr, t: ScalarType) -> ast.expr:
    """``t(a op b)`` for ``ADD``/``SUB``/``MUL`` with two's-complement wrap-around.

    numba computes int64 arithmetic with LLVM's ``nsw`` flag, which lets LLVM assume no
    overflow (``(x + 1) > x`` folds to true). Unsigned arithmetic carries no such flag, so
    an int64 op goes through uint64 and back (the same machine instruction). Narrower ints
    are computed in int64 by numba and cannot overflow it."""
    if t.is_signed and t.bits == 64:
        return expr(f"T(U(a) {_PYOP[code]} U(b))", T=ctor(t), U=expr("np.uint64"), a=a, b=b)
    return wrap(_bin(code, a, b), t)


def _cast(x: ast.expr, src: object, t: ScalarType) -> ast.expr:
    assert isinstance(src, ScalarType)
    if t.is_bool:
        return x if src.is_bool else expr("x != z", x=x, z=const(0, src))
    if src.is_float and t.is_int:
        return _float_to_int(x, src, t)
    return ast.Call(ctor(t), [x], [])


def _float_to_int(x: ast.expr, src: ScalarType, t: ScalarType) -> ast.expr:
    """The float -> int conversion of ``semantics.float_to_int`` (NumPy's array ``astype``
    on x86-64): truncation where the value fits, the machine's fixed answer where it does
    not. The machine conversion only ever sees an in-range operand, so no target's own
    rule for out-of-range values (LLVM: poison; PTX: saturation) can show."""
    if t.bits < 32:  # through int32, then wrapped to the width
        return ast.Call(ctor(t), [_trunc_or_min(x, src, 32)], [])
    if t.is_signed:
        return _trunc_or_min(x, src, t.bits)
    half = const(2.0 ** (t.bits - 1), src)
    # x >= 2**(b-1): convert x - 2**(b-1) and add 2**(b-1) back, wrapping (a value beyond
    # 2**b gives INT_MIN + 2**(b-1) = 0); otherwise the signed conversion, wrapped.
    hi = _trunc_or_min(expr("x - h", x=x, h=half), src, t.bits)
    lo = _trunc_or_min(x, src, t.bits)
    high = expr("T(T(h) + T(H))", T=ctor(t), h=hi, H=const(2 ** (t.bits - 1), t))
    return expr("hv if x >= h else T(lv)", hv=high, x=x, h=half, T=ctor(t), lv=lo)


def _trunc_or_min(x: ast.expr, src: ScalarType, bits: int) -> ast.expr:
    """The signed ``bits``-wide truncation of ``x`` if ``-2**(bits-1) <= x < 2**(bits-1)``,
    else ``-2**(bits-1)`` (NaN included): x86-64's ``cvttsd2si``."""
    s = scalar_by_name(f"i{bits}")
    lo, hi = const(-(2.0 ** (bits - 1)), src), const(2.0 ** (bits - 1), src)
    ok = expr("(x >= lo) & (x < hi)", x=x, lo=lo, hi=hi)
    # the conversion is of 0 when out of range, so it never sees an out-of-range operand
    return expr("T(x if ok else z) if ok else m", T=ctor(s), x=x, ok=ok, z=const(0.0, src),
                m=const(-(2 ** (bits - 1)), s))  # fmt: skip


def _float_op(
    code: Opcode, ops: list[ast.expr], t: ScalarType, out: str, cx: OpContext
) -> list[ast.stmt]:
    a = ops[0]
    if code in (Opcode.ADD, Opcode.SUB, Opcode.MUL, Opcode.TRUEDIV):
        return [assign(out, _bin(code, a, ops[1]))]
    if code is Opcode.FLOORDIV:
        # numba's float // and % follow CPython's float_divmod, which is NumPy's npy_divmod;
        # a zero divisor gives NumPy's inf/nan under the numpy error model both targets use.
        return [assign(out, expr("a // b", a=a, b=ops[1]))]
    if code is Opcode.FLOORMOD:
        return [assign(out, expr("a % b", a=a, b=ops[1]))]
    if code is Opcode.POW:
        return [assign(out, cx.hooks.math("pow", ops, t))]
    if code is Opcode.NEG:
        return [assign(out, expr("-a", a=a))]
    if code is Opcode.ABS:
        return [assign(out, expr("abs(a)", a=a))]
    raise CompileError(f"{code} on {t} is not supported by the emitter")


def _int_op(
    code: Opcode, ops: list[ast.expr], t: ScalarType, out: str, tmp: Temps
) -> list[ast.stmt]:
    a = ops[0]
    zero = const(0, t)
    if code in (Opcode.ADD, Opcode.SUB, Opcode.MUL):
        return [assign(out, _wrapping(code, a, ops[1], t))]
    if code in (Opcode.AND, Opcode.OR, Opcode.XOR):
        return [assign(out, wrap(_bin(code, a, ops[1]), t))]
    if code is Opcode.NEG:
        return [assign(out, negate(a, t))]
    if code is Opcode.INVERT:
        return [assign(out, wrap(expr("~a", a=a), t))]
    if code is Opcode.ABS:
        if not t.is_signed:
            return [assign(out, a)]
        return [assign(out, expr("n if a < z else a", n=negate(a, t), a=a, z=zero))]
    b = ops[1]
    if code in _DIVISIONS:
        return int_division(code, a, b, t, out=out, tmp=tmp)
    if code in (Opcode.SHL, Opcode.SHR):
        return _shift(code, a, b, t, out=out, tmp=tmp)
    if code is Opcode.POW:
        return _int_pow(a, b, t, out, tmp)
    raise CompileError(f"{code} on {t} is not supported by the emitter")


def _shift(
    code: Opcode, a: ast.expr, b: ast.expr, t: ScalarType, *, out: str, tmp: Temps
) -> list[ast.stmt]:
    zero, bits = const(0, t), const(t.bits, t)
    k = tmp.new()
    if t.is_signed:
        ok = expr("(b >= z) & (b < n)", b=b, z=zero, n=bits)
    else:
        ok = expr("b < n", b=b, n=bits)
    c = tmp.new()
    # NumPy: a count outside [0, bits) shifts everything out (SHR of a negative gives -1).
    safe = expr("b if k else z", b=b, k=name(k), z=zero)
    stmts: list[ast.stmt] = [assign(k, ok), assign(c, safe)]
    if code is Opcode.SHL:
        res = expr("T(a << c) if k else z", T=ctor(t), a=a, c=name(c), k=name(k), z=zero)
    elif t.is_signed:
        edge = expr("m if a < z else z", m=const(-1, t), a=a, z=zero)
        res = expr("T(a >> c) if k else e", T=ctor(t), a=a, c=name(c), k=name(k), e=edge)
    else:
        res = expr("T(a >> c) if k else z", T=ctor(t), a=a, c=name(c), k=name(k), z=zero)
    stmts.append(assign(out, res))
    return stmts


def _int_pow(a: ast.expr, b: ast.expr, t: ScalarType, out: str, tmp: Temps) -> list[ast.stmt]:
    base, e = tmp.new(), tmp.new()
    zero, one = const(0, t), const(1, t)
    T = ctor(t)
    stmts: list[ast.stmt] = [assign(out, one), assign(base, a), assign(e, b)]
    if t.is_signed:
        # a negative exponent: 1 for base 1, +-1 for base -1 (by parity), else 0
        m1 = const(-1, t)
        neg = expr(
            "o if a == o else ((o if (b & o) == z else m) if a == m else z)",
            o=one, a=a, b=b, z=zero, m=m1,
        )  # fmt: skip
        stmts.append(ast.If(expr("b < z", b=b, z=zero), [assign(out, neg), assign(e, zero)], []))
    loop = ast.While(
        expr("e > z", e=name(e), z=zero),
        [
            ast.If(
                expr("(e & o) != z", e=name(e), o=one, z=zero),
                [assign(out, _wrapping(Opcode.MUL, name(out), name(base), t))],
                [],
            ),
            assign(base, _wrapping(Opcode.MUL, name(base), name(base), t)),
            assign(e, expr("T(e >> o)", T=T, e=name(e), o=one)),
        ],
        [],
    )
    stmts.append(loop)
    return stmts


def _load(op: Op, cx: OpContext, out: str, idx: list[ast.expr], tmp: Temps) -> list[ast.stmt]:
    c = cx.capture_of(op.operands[0])
    narrow = [v.type == I32 for v in op.operands[1:]]
    value = cx.hooks.load(c, idx, narrow=narrow) if any(narrow) else cx.hooks.load(c, idx)
    fail = cx.hooks.bounds_fail(c, idx, op.span) if idx else []
    if not fail:
        return [assign(out, value)]
    t = op.result.type
    assert isinstance(t, ScalarType)
    ok = tmp.new()
    conds = [
        expr("(i >= 0) & (i < n)", i=i, n=cx.hooks.shape(c, axis)) for axis, i in enumerate(idx)
    ]
    test = conds[0]
    for cond in conds[1:]:
        test = expr("p & q", p=test, q=cond)
    return [
        assign(ok, test),
        ast.If(expr("not k", k=name(ok)), fail, []),
        assign(out, expr("v if k else z", v=value, k=name(ok), z=const(0, t))),
    ]


def _tile_op(op: Op, cx: OpContext, out: str) -> list[ast.stmt]:
    """The GPU tiling ops (``offload.opt.stage``): the backend's shared-memory tiles."""
    hooks, code = cx.hooks, op.opcode
    if code is Opcode.LANE:
        t = op.result.type
        assert isinstance(t, ScalarType)
        return [assign(out, ast.Call(ctor(t), [hooks.lane(op.attrs["axis"])], []))]
    if code is Opcode.BARRIER:
        return [*hooks.barrier(), assign(out, const(True, BOOL))]
    if code is Opcode.TILE_READ:
        it = cx.ref(op.operands[-1])
        return [assign(out, hooks.tile_read(op.attrs["slot"], op.attrs["along"], it))]
    assert code is Opcode.STAGE
    if is_window(op):
        c = cx.capture_of(op.operands[0])
        base = cx.ref(op.operands[2])
        stmts = hooks.stage_window(op.attrs["slot"], op.attrs["offset"], c, base)
        return [*stmts, assign(out, const(True, BOOL))]
    index = op.operands[1:]
    idx = [cx.ref(v) for v in index]
    narrow = [v.type == I32 for v in index]
    c = cx.capture_of(op.operands[0])
    value = cx.hooks.load(c, idx, narrow=narrow) if any(narrow) else cx.hooks.load(c, idx)
    return [*hooks.stage(op.attrs["slot"], value), assign(out, const(True, BOOL))]


def _local_op(op: Op, cx: OpContext, out: str, tmp: Temps) -> list[ast.stmt]:
    """The local-array ops: ``t = <backend's array>``, ``t[i, j]``, ``t[i, j] = v`` and a
    fill loop; with bounds checks (``hooks.local_bounds_fail``) a bad index is reported,
    the read yields 0 and the write is skipped."""
    code = op.opcode
    if code is Opcode.LOCAL:
        return []  # allocated before the body (``structure.emit_body_and_locals``)
    lt = op.operands[0].type
    assert isinstance(lt, LocalType)
    arr = cx.ref(op.operands[0])
    done = assign(out, const(True, BOOL))
    if code is Opcode.LOCAL_FILL:
        loops = [tmp.new() for _ in lt.shape]
        at_all: ast.expr = (
            name(loops[0]) if len(loops) == 1 else ast.Tuple([name(k) for k in loops], ast.Load())
        )
        body: list[ast.stmt] = [
            ast.Assign([ast.Subscript(arr, at_all, ast.Store())], cx.ref(op.operands[1]), lineno=0)
        ]
        for k, n in reversed(list(zip(loops, lt.shape, strict=True))):
            body = [ast.For(ast.Name(k, ast.Store()), expr(f"range({n})"), body, [], lineno=0)]
        return [*body, done]
    rank = len(lt.shape)
    idx = [cx.ref(v) for v in op.operands[1 : 1 + rank]]
    # IR indices are in bounds and >= 0: unsigned spares numba's negative-index wrap.
    unsigned = [expr("np.uint64(i)", i=i) for i in idx]
    at: ast.expr = unsigned[0] if rank == 1 else ast.Tuple(unsigned, ast.Load())
    fail = cx.hooks.local_bounds_fail(lt, idx, op.span)
    ok = None
    checks: list[ast.stmt] = []
    if fail:
        ok = tmp.new()
        test = expr(f"(i >= 0) & (i < {lt.shape[0]})", i=idx[0])
        for axis in range(1, rank):
            test = expr(f"p & (i >= 0) & (i < {lt.shape[axis]})", p=test, i=idx[axis])
        checks = [assign(ok, test), ast.If(expr("not k", k=name(ok)), fail, [])]
        safe = [expr("np.uint64(i if k else 0)", i=i, k=name(ok)) for i in idx]
        at = safe[0] if rank == 1 else ast.Tuple(safe, ast.Load())
    if code is Opcode.LOCAL_LOAD:
        value: ast.expr = ast.Subscript(arr, at, ast.Load())
        if ok is not None:
            value = expr("v if k else z", v=value, k=name(ok), z=const(0, lt.elem))
        return [*checks, assign(out, value)]
    store = ast.Assign([ast.Subscript(arr, at, ast.Store())], cx.ref(op.operands[-1]), lineno=0)
    if ok is not None:
        return [*checks, ast.If(name(ok), [store], []), done]
    return [store, done]
