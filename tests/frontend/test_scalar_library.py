"""The scalar library (issue 17 item 6; inventory in docs/limits.md): every NumPy scalar
function and ``math`` function offload accepts gives NumPy's / CPython's value and dtype on
the interpreter, ``compute_s`` and ``compute_p`` (the simulator runs the same cases:
``tests/sim/test_scalar_library_sim.py``), over signed zeros, infinities and NaN.

Functions are grouped into tuple-returning element functions (one compile per group).
Exact functions must match bit for bit (the sign of zero included); the transcendental
ones (``TRANSCENDENTAL``) within 4 ulp, since numba's libm may round differently."""

from __future__ import annotations

import itertools
import linecache
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import offload as ol
from offload.frontend.lower import fetch_captures, lower
from offload.ir.interp import compute

SPECIAL = [-np.inf, -2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 2.5, np.inf, np.nan]
PAIRS = list(itertools.product(SPECIAL, repeat=2))
X = np.array([p[0] for p in PAIRS])
Y = np.array([p[1] for p in PAIRS])
X32, Y32 = X.astype(np.float32), Y.astype(np.float32)
TRIPLES = list(itertools.product([-np.inf, -1.0, -0.0, 0.0, 1.0, np.inf, np.nan], repeat=3))
C = np.array(TRIPLES)
C32 = C.astype(np.float32)
INTS = np.array(
    [-(2**63), -(2**40) - 3, -129, -128, -7, -1, 0, 1, 5, 127, 255, 2**40 + 7, 2**63 - 1]
)
I8 = np.array([-128, -127, -7, -1, 0, 1, 5, 127], dtype=np.int8)
U8 = np.array([0, 1, 5, 127, 128, 254, 255, 3], dtype=np.uint8)
U64 = np.array([0, 1, 2**63, 2**64 - 1, 0x9E3779B97F4A7C15, 12345, 2**32, 7], dtype=np.uint64)
SAFE = np.array([0.25, 0.5, 1.0, 1.5, 2.5, 3.0, 7.5, 30.0, 100.5, 171.5])
"""Inputs where CPython's math.gamma/lgamma neither raise nor overflow."""
_R = np.random.default_rng(7)
WIDE = np.concatenate(
    [
        _R.standard_normal(400) * 10.0 ** _R.integers(-6, 9, 400),
        [0.5, 1.5, 2.5, -0.5, 2.675, 1.005, 0.125, 1e30, -1e300, 5e-324, 3.4e38],
        SPECIAL,
    ]
)
"""Values over many magnitudes for rounding to decimals (ties, overflow of ``x * 10**d``)."""
with np.errstate(over="ignore"):
    WIDE32 = WIDE.astype(np.float32)  # (-1e300 overflows to -inf)
_NEAR = [-np.inf, -1.0, -1e-9, -0.0, 0.0, 1e-9, 1e-8, 1.0, 1.00001, 1.0000001, np.inf, np.nan]
CX = np.array([a for a in _NEAR for _ in _NEAR])
CY = np.array([b for _ in _NEAR for b in _NEAR])
"""Pairs of values near each other and of specials, for ``np.isclose``."""
NEG = np.array([-0.5, -1.5, -2.5, -3.25, -100.5, -200.5, 1e-300, 0.75, 4.0, 6.0])

UNARY_FLOAT = [
    "np.sign({x})", "np.isnan({x})", "np.isinf({x})", "np.isfinite({x})", "np.floor({x})",
    "np.ceil({x})", "np.trunc({x})", "np.rint({x})", "np.deg2rad({x})", "np.rad2deg({x})",
    "np.radians({x})", "np.degrees({x})", "np.signbit({x})", "np.round({x})",
    "np.around({x})", "np.positive({x})", "np.reciprocal({x})", "np.square({x})",
    "np.fabs({x})", "np.abs({x})", "np.negative({x})", "np.logical_not({x})",
    "np.exp2({x})", "np.log2({x})", "np.log1p({x})", "np.expm1({x})",
]  # fmt: skip
BINARY_FLOAT = [
    "np.fmod({x}, {y})", "np.copysign({x}, {y})", "np.fmin({x}, {y})", "np.fmax({x}, {y})",
    "np.maximum({x}, {y})", "np.minimum({x}, {y})", "np.add({x}, {y})",
    "np.subtract({x}, {y})", "np.multiply({x}, {y})", "np.divide({x}, {y})",
    "np.true_divide({x}, {y})", "np.greater({x}, {y})", "np.less_equal({x}, {y})",
    "np.equal({x}, {y})", "np.not_equal({x}, {y})", "np.less({x}, {y})",
    "np.greater_equal({x}, {y})", "np.logical_and({x}, {y})", "np.logical_or({x}, {y})",
    "np.logical_xor({x}, {y})", "np.where({x} > {y}, {x}, {y})", "np.clip({x}, -1.0, 1.0)",
    "np.hypot({x}, {y})", "np.arctan2({x}, {y})",
]  # fmt: skip
MATH_FLOAT = [
    "math.degrees({x})", "math.radians({x})", "math.isnan({x})", "math.isinf({x})",
    "math.isfinite({x})", "math.copysign({x}, {y})", "math.hypot({x}, {y})",
    "math.atan2({x}, {y})", "math.erf({x})", "math.erfc({x})",
]  # fmt: skip
INTEGER = [
    "np.bitwise_count({x})", "np.sign({x})", "np.left_shift({x}, 3)", "np.right_shift({x}, 3)",
    "np.bitwise_and({x}, 0x7F)", "np.bitwise_or({x}, 0x40)", "np.bitwise_xor({x}, 0x55)",
    "np.invert({x})", "np.signbit({x})", "np.clip({x}, 0, 100)", "np.fmin({x}, 5)",
    "np.fmax({x}, 5)", "np.round({x})", "np.add({x}, {x})", "np.multiply({x}, 3)",
    "np.maximum({x}, 1)", "np.minimum({x}, 1)", "np.logical_not({x})", "np.greater({x}, 1)",
    "np.positive({x})",
]  # fmt: skip
ROUND_FLOAT = [
    "np.round({x}, 2)", "np.round({x}, 0)", "np.round({x}, -2)", "np.around({x}, 5)",
    "round({x}, 1)", "round({x}, -1)", "np.round({x}, decimals=3)", "round({x}, ndigits=7)",
    "np.round({x}, 12)", "np.round({x}, 30)", "np.round({x}, 400)", "np.round({x}, -400)",
]  # fmt: skip
ISCLOSE = [
    "np.isclose({x}, {y})", "np.isclose({x}, {y}, rtol=1e-3)",
    "np.isclose({x}, {y}, atol=1e-6, equal_nan=True)", "np.isclose({x}, 1, 0.1, 0.0)",
    "np.isclose(float({x}), {y}, equal_nan=True, rtol=np.float32(0.5))",
]  # fmt: skip
ROUND_INTEGER = ["np.round({x}, 2)", "round({x}, 3)", "np.around({x}, decimals=0)"]
TRANSCENDENTAL = ("exp2", "log2", "log1p", "expm1", "hypot", "arctan2", "atan2", "erf",
                  "erfc")  # fmt: skip


def _define(source: str, env: dict[str, Any]) -> Any:
    name = f"<scalar-library-{len(linecache.cache)}>"
    text = f"fn = {source}\n"
    linecache.cache[name] = (len(text), None, [text], name)
    ns: dict[str, Any] = {"np": np, "math": math, **env}
    exec(compile(text, name, "exec"), ns)
    return ns["fn"]


def _group(exprs: list[str], x: str, y: str, env: dict[str, Any], n: int) -> Any:
    parts = [e.format(x=f"{x}[i]", y=f"{y}[i]") for e in exprs]
    return parts, _define(f"lambda i: ({', '.join(parts)},)", env), n


GROUPS: dict[str, Any] = {
    "unary-f64": _group(UNARY_FLOAT, "X", "Y", {"X": X, "Y": Y}, len(X)),
    "unary-f32": _group(UNARY_FLOAT, "X", "Y", {"X": X32, "Y": Y32}, len(X)),
    "binary-f64": _group(BINARY_FLOAT, "X", "Y", {"X": X, "Y": Y}, len(X)),
    "binary-f32": _group(BINARY_FLOAT, "X", "Y", {"X": X32, "Y": Y32}, len(X)),
    "math-f64": _group(MATH_FLOAT, "X", "Y", {"X": X, "Y": Y}, len(X)),
    "math-f32": _group(MATH_FLOAT, "X", "Y", {"X": X32, "Y": Y32}, len(X)),
    "round-f64": _group(ROUND_FLOAT, "W", "W", {"W": WIDE}, len(WIDE)),
    "round-f32": _group(ROUND_FLOAT, "W", "W", {"W": WIDE32}, len(WIDE)),
    "isclose-f64": _group(ISCLOSE, "P", "Q", {"P": CX, "Q": CY}, len(CX)),
    "isclose-f32": _group(
        ISCLOSE, "P", "Q", {"P": CX.astype(np.float32), "Q": CY.astype(np.float32)}, len(CX)
    ),
    "isclose-int": _group(
        ["np.isclose({x}, {y})", "np.isclose({x}, {x} + 1, atol=1)"], "A", "A", {"A": I8}, len(I8)
    ),
    "round-int": _group(ROUND_INTEGER, "A", "A", {"A": INTS}, len(INTS)),
    "round-int8": _group(ROUND_INTEGER, "A", "A", {"A": I8}, len(I8)),
    "int64": _group(INTEGER, "A", "A", {"A": INTS}, len(INTS)),
    "int8": _group(INTEGER, "A", "A", {"A": I8}, len(I8)),
    "uint8": _group(INTEGER, "A", "A", {"A": U8}, len(U8)),
    "uint64": _group(INTEGER, "A", "A", {"A": U64}, len(U64)),
    "clip-f64": _group(["np.clip(C[i, 0], C[i, 1], C[i, 2])"], "C", "C", {"C": C}, len(C)),
    "clip-f32": _group(["np.clip(C[i, 0], C[i, 1], C[i, 2])"], "C", "C", {"C": C32}, len(C)),
    "gamma": _group(["math.gamma({x})", "math.lgamma({x})"], "S", "S", {"S": SAFE}, len(SAFE)),
}
"""name -> (expression per result, element function, extent)."""


def reference(fn: Callable[[int], tuple[Any, ...]], n: int) -> list[np.ndarray]:
    """What CPython + NumPy compute, element by element (the language's meaning)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        rows = [fn(i) for i in range(n)]
    return [np.array([row[r] for row in rows]) for r in range(len(rows[0]))]


def assert_library(group: str, got: tuple[np.ndarray, ...] | np.ndarray) -> None:
    parts, fn, n = GROUPS[group]
    outs = got if isinstance(got, tuple) else (got,)
    want = reference(fn, n)
    assert len(outs) == len(want)
    for part, g, w in zip(parts, outs, want, strict=True):
        assert g.dtype == w.dtype, (part, g.dtype, w.dtype)
        if "gamma" in part:
            # numba and libdevice call the C library's tgamma/lgamma; CPython has its own
            # (up to 15 ulp apart on these inputs, lgamma near its zero at 1.5): limits.md
            np.testing.assert_array_max_ulp(g, w, maxulp=32)
            continue
        if w.dtype.kind == "f" and any(t in part for t in TRANSCENDENTAL):
            np.testing.assert_array_max_ulp(g, w, maxulp=4)
            continue
        np.testing.assert_array_equal(g, w, err_msg=part)
        if w.dtype == np.float32 and ("fmin" in part or "fmax" in part):
            # NumPy's own float32 fmin/fmax pick the other zero of (-0.0, 0.0) than its
            # float64 ones (a SIMD loop); offload gives the float64 rule (docs/limits.md).
            continue
        if w.dtype.kind == "f":  # the sign of zero (and of infinities) too
            ok = ~np.isnan(w)
            np.testing.assert_array_equal(np.signbit(g[ok]), np.signbit(w[ok]), err_msg=part)


@pytest.mark.unit
@pytest.mark.parametrize("group", list(GROUPS))
def test_scalar_library_matches_numpy_in_the_interpreter(group: str) -> None:
    _, fn, n = GROUPS[group]
    lowered = lower(fn, 1)
    assert_library(group, tuple(compute(lowered.ir, (n,), fetch_captures(fn, lowered))))


@pytest.mark.cpu
@pytest.mark.parametrize("compute_x", [ol.compute_s, ol.compute_p], ids=["s", "p"])
@pytest.mark.parametrize("group", list(GROUPS))
def test_scalar_library_matches_numpy_on_the_cpu(group: str, compute_x: Any) -> None:
    _, fn, n = GROUPS[group]
    assert_library(group, compute_x((n,), fn))


POLES = np.array([0.0, -0.0, -1.0, -2.0, np.inf, -np.inf, np.nan, 1e6])
POLE_GAMMA = np.array([np.inf, -np.inf, np.nan, np.nan, np.inf, np.nan, np.nan, np.inf])
POLE_LGAMMA = np.array([np.inf, np.inf, np.inf, np.inf, np.inf, np.inf, np.nan, math.lgamma(1e6)])


def gamma_poles(i: int) -> Any:
    return math.gamma(POLES[i]), math.lgamma(POLES[i])


def assert_poles(got: tuple[np.ndarray, ...]) -> None:
    g, lg = got
    np.testing.assert_array_equal(g, POLE_GAMMA)
    np.testing.assert_array_equal(np.signbit(g[:2]), [False, True])
    np.testing.assert_array_equal(lg, POLE_LGAMMA)


@pytest.mark.unit
def test_gamma_at_its_poles_is_c_tgamma_not_an_exception_in_the_interpreter() -> None:
    lowered = lower(gamma_poles, 1)
    assert_poles(tuple(compute(lowered.ir, (len(POLES),), fetch_captures(gamma_poles, lowered))))


@pytest.mark.cpu
@pytest.mark.parametrize("compute_x", [ol.compute_s, ol.compute_p], ids=["s", "p"])
def test_gamma_at_its_poles_is_c_tgamma_on_the_cpu(compute_x: Any) -> None:
    assert_poles(compute_x((len(POLES),), gamma_poles))


@pytest.mark.unit
def test_math_gamma_beyond_safe_inputs_follows_cpython_where_it_returns() -> None:
    def f(i: int) -> Any:
        return math.gamma(NEG[i]), math.lgamma(NEG[i])

    lowered = lower(f, 1)
    g, lg = compute(lowered.ir, (len(NEG),), fetch_captures(f, lowered))
    np.testing.assert_array_equal(g, [math.gamma(v) for v in NEG])
    np.testing.assert_array_equal(lg, [math.lgamma(v) for v in NEG])


@pytest.mark.unit
def test_integer_reciprocal_is_a_located_unsupported_error() -> None:
    def f(i: int) -> Any:
        return np.reciprocal(INTS[i])

    with pytest.raises(ol.OffloadError, match="np.reciprocal of an integer") as info:
        lower(f, 1)
    assert "^" in str(info.value)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("round(float(W[i]), 2)", r"round\(x, n\) of a Python number"),
        ("round(W[i] * 1.0, 2) + round(2.5, 1)", r"round\(x, n\) of a Python number"),
        ("np.round(INTS[i], -1)", "rounding an integer to negative decimals"),
        ("np.round(W[i], i)", "not a constant integer"),
    ],
)
def test_rounding_offload_does_not_do_as_cpython_is_a_located_error(
    body: str, message: str
) -> None:
    fn = _define(f"lambda i: {body}", {"W": WIDE, "INTS": INTS})
    with pytest.raises(ol.OffloadError, match=message) as info:
        lower(fn, 1)
    assert "^" in str(info.value)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("np.isclose(W[i], 1.0, equal_nan=W[i] > 0)", "equal_nan must be a constant"),
        ("np.isclose(W[i], 1.0, tol=0.1)", "keyword arguments to 'np.isclose'"),
        ("np.isclose(W[i:i + 2], 1.0)", "must be a number or bool"),
    ],
)
def test_isclose_misused_is_a_located_error(body: str, message: str) -> None:
    fn = _define(f"lambda i: {body}", {"W": WIDE})
    with pytest.raises(ol.OffloadError, match=message) as info:
        lower(fn, 1)
    assert "^" in str(info.value)


@pytest.mark.unit
def test_rounding_to_float_decimals_is_numpys_type_error() -> None:
    fn = _define("lambda i: np.round(W[i], 2.0)", {"W": WIDE})
    with pytest.raises(ol.OffloadError, match=r"np.round.*\(float64, float\)"):
        lower(fn, 1)


@pytest.mark.ptx
@pytest.mark.parametrize("group", ["gamma", "uint64", "binary-f32", "unary-f64", "round-f32"])
def test_scalar_library_compiles_to_ptx(group: str) -> None:
    import io

    _, fn, n = GROUPS[group]
    text = ol.explain(fn, (n,), target="gpu", file=io.StringIO())
    assert ".entry" in text[text.find("== PTX ==") :]
