"""Helpers for the opcode tests: one IR function per dtype that applies every op.

One IR function per dtype computes every op on every pair of edge values (one result per
op), so each backend compiles one kernel per dtype. Ints and bools must match exactly,
float arithmetic bit for bit (up to NaN payloads). Library math functions (and POW) come from
different libms (NumPy's SIMD loops vs the C library numba calls); each is within 1 ulp of
the exact value, so they may differ from each other by up to 2 ulp.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from offload.cpu import CpuBackend
from offload.ir import Builder, Capture, Opcode, Value
from offload.ir.core import Function
from offload.ir.interp import compute
from offload.ir.ops import COMPARE, MATH_FUNCTIONS
from offload.ir.types import BOOL, F32, F64, I32, I64, SCALARS, U8, ArrayType, ScalarType
from offload.options import CompileOptions

INT_BINARY = [
    Opcode.ADD, Opcode.SUB, Opcode.MUL, Opcode.FLOORDIV, Opcode.FLOORMOD, Opcode.DIV,
    Opcode.REM, Opcode.POW, Opcode.MIN, Opcode.MAX, Opcode.AND, Opcode.OR, Opcode.XOR,
    Opcode.SHL, Opcode.SHR,
]  # fmt: skip
FLOAT_BINARY = [
    Opcode.ADD, Opcode.SUB, Opcode.MUL, Opcode.TRUEDIV, Opcode.FLOORDIV, Opcode.FLOORMOD,
    Opcode.POW, Opcode.MIN, Opcode.MAX,
]  # fmt: skip
EXACT_FLOAT = {"add", "sub", "mul", "truediv", "floordiv", "floormod", "min", "max", "neg"}
CPYTHON_OWN = {"math.gamma", "math.lgamma"}
"""Functions whose interpreter value is CPython's own algorithm, not the C library's that
the kernels call: they differ by up to ~16 ulp of ``max(1, |value|)`` (docs/limits.md):
lgamma(0.5) by 3 ulp; near lgamma's zeros (lgamma(-2.5) = -0.056) the error is absolute."""


def _int_edges(t: ScalarType) -> list[int]:
    info = np.iinfo(t.dtype)
    vals = {0, 1, 2, 3, 7, int(info.max), int(info.min), int(info.max) - 1, t.bits - 1, t.bits}
    if t.is_signed:
        vals |= {-1, -2, -3, -7, int(info.min) + 1, -t.bits}
    return sorted(v for v in vals if info.min <= v <= info.max)


def _float_edges(t: ScalarType) -> list[float]:
    info = np.finfo(t.dtype)
    return [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, -7.25, 0.1, 1e-3,
            float(info.max), float(info.tiny), 1e30 if t is F64 else 3e7,
            math_inf := float("inf"), -math_inf, float("nan")]  # fmt: skip


def _pairs(t: ScalarType) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    if t.is_bool:
        edges: list[Any] = [False, True]
    elif t.is_int:
        edges = _int_edges(t)
    else:
        edges = _float_edges(t)
    xs, ys = zip(*itertools.product(edges, edges), strict=True)
    return np.array(xs, dtype=t.dtype), np.array(ys, dtype=t.dtype)


def ops_function(t: ScalarType) -> tuple[Function, list[str]]:
    """rank 1: x = a[i], y = b[i]; one result per op applied to (x, y)."""
    arr = ArrayType(t, 1)
    b = Builder(f"ops_{t}", 1, [Capture("a", arr), Capture("b", arr)])
    i, a, bb = b.function.params
    x, y = b.load(a, [i]), b.load(bb, [i])
    results: list[tuple[str, Value]] = []
    if t.is_bool:
        for code in (Opcode.AND, Opcode.OR, Opcode.XOR, Opcode.MIN, Opcode.MAX):
            results.append((str(code), b.binary(code, x, y)))
        results.append(("not", b.unary(Opcode.NOT, x)))
    elif t.is_int:
        for code in INT_BINARY:
            results.append((str(code), b.binary(code, x, y)))
        for code in (Opcode.NEG, Opcode.INVERT, Opcode.ABS):
            results.append((str(code), b.unary(code, x)))
        results.append(("add_const", b.binary(Opcode.ADD, x, b.const(-3 if t.is_signed else 3, t))))
    else:
        for code in FLOAT_BINARY:
            results.append((str(code), b.binary(code, x, y)))
        for code in (Opcode.NEG, Opcode.ABS):
            results.append((str(code), b.unary(code, x)))
        for fn, arity in sorted(MATH_FUNCTIONS.items()):
            results.append((f"math.{fn}", b.math(fn, [x, y][:arity])))
        results.append(("mul_const", b.binary(Opcode.MUL, x, b.const(0.1, t))))
        # float -> int casts only where NumPy defines them: finite, small, non-negative
        small = b.binary(Opcode.LT, b.unary(Opcode.ABS, x), b.const(100.0, t))
        safe = b.select(small, b.unary(Opcode.ABS, x), b.const(0.0, t))
        for target in SCALARS:
            if target.is_int:
                results.append((f"cast_safe_{target}", b.cast(safe, target)))
    for code in sorted(COMPARE, key=str):
        results.append((str(code), b.binary(code, x, y)))
    results.append(("select", b.select(b.binary(Opcode.LT, x, y), x, y)))
    for target in SCALARS:
        if target != t and (t.is_int or t.is_bool or not target.is_int):
            results.append((f"cast_{target}", b.cast(x, target)))
    b.ret([v for _, v in results])
    b.function.result_types = [v.type for _, v in results]  # type: ignore[misc]
    return b.function, [n for n, _ in results]


def _ulps(
    got: np.ndarray[Any, Any], want: np.ndarray[Any, Any], floor: float = 0.0
) -> np.ndarray[Any, Any]:
    """The distance in ulps of ``max(|want|, floor)``."""
    both_nan = np.isnan(got) & np.isnan(want)
    same = (got == want) & (np.signbit(got) == np.signbit(want))
    with np.errstate(all="ignore"):
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        ulp = np.spacing(np.maximum(np.abs(want), want.dtype.type(floor))).astype(np.float64)
        return np.where(both_nan | same, 0.0, np.where(np.isfinite(diff), diff / ulp, np.inf))


def check_against_interpreter(
    fn: Function, names: list[str], t: ScalarType, backend: CpuBackend
) -> None:
    xs, ys = _pairs(t)
    want = compute(fn, xs.shape, [xs, ys])
    kernel = backend.compile(fn, CompileOptions())
    got = backend.allocate(xs.shape, [r.dtype for r in fn.result_types])
    with np.errstate(all="ignore"):
        kernel.launch(xs.shape, got, [xs, ys])
    failures = []
    for name, g, w in zip(names, got, want, strict=True):
        assert g.dtype == w.dtype, name
        if g.dtype.kind == "f":
            if name in CPYTHON_OWN:
                bad = _ulps(g, w, floor=1.0) > 16.0
            else:
                tol = 0.0 if name in EXACT_FLOAT or name.startswith("cast") else 2.0
                bad = _ulps(g, w) > tol
        else:
            bad = g != w
        if bad.any():
            k = int(np.argmax(bad))
            failures.append(f"{name}({xs[k]!r}, {ys[k]!r}) = {g[k]!r}, interpreter {w[k]!r}")
    assert not failures, "\n".join(failures[:20])


_FUNCTIONS: dict[ScalarType, tuple[Function, list[str]]] = {}


def function_for(t: ScalarType) -> tuple[Function, list[str]]:
    """The ops function of ``t`` (built once per process: one kernel cache key per dtype)."""
    if t not in _FUNCTIONS:
        _FUNCTIONS[t] = ops_function(t)
    return _FUNCTIONS[t]


TYPES = [I32, I64, U8, F32, F64, BOOL]
