"""``eval_op`` follows NumPy (in the value's own width) and Python exactly, opcode by opcode.

References are NumPy *array* ufuncs (a different code path from the scalar evaluation) and
exact Python integers; warnings are errors in this suite, so a leaked NumPy warning fails.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import from_dtype

from offload.ir.ops import MATH_FUNCTIONS, MATH_PREDICATES, Opcode
from offload.ir.semantics import SemanticsError, eval_op
from offload.ir.types import (
    BOOL,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    SCALARS,
    U8,
    U16,
    U32,
    U64,
    ScalarType,
)

pytestmark = pytest.mark.unit

INTS = [I8, I16, I32, I64, U8, U16, U32, U64]
FLOATS = [F32, F64]


def _array_ref(ufunc: Any, t: ScalarType, *xs: np.generic) -> np.generic:
    """The ufunc applied to one-element arrays of ``t`` (NumPy's array loop)."""
    with np.errstate(all="ignore"):
        out = ufunc(*(np.array([x], dtype=t.dtype) for x in xs))
    return out[0]  # type: ignore[no-any-return]


@st.composite
def int_pair(draw: st.DrawFn, types: list[ScalarType] = INTS) -> tuple[ScalarType, Any, Any]:
    t = draw(st.sampled_from(types))
    # Bias toward the edges (0, ±1, extremes) where floor/wrap rules differ.
    info = np.iinfo(t.dtype)
    edge = st.sampled_from([0, 1, -1, 2, -2, int(info.min), int(info.max), int(info.min) + 1])
    val = st.one_of(edge, from_dtype(t.dtype)).map(
        lambda v: t.dtype.type(v) if info.min <= int(v) <= info.max else t.dtype.type(0)
    )
    return t, draw(val), draw(val)


def _floats(t: ScalarType) -> st.SearchStrategy[Any]:
    special = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, math.inf, -math.inf, math.nan])
    return st.one_of(special, from_dtype(t.dtype)).map(t.dtype.type)


@st.composite
def float_pair(draw: st.DrawFn) -> tuple[ScalarType, Any, Any]:
    t = draw(st.sampled_from(FLOATS))
    return t, draw(_floats(t)), draw(_floats(t))


def _same(got: np.generic, want: Any, t: ScalarType) -> None:
    assert got.dtype == t.dtype, (got, got.dtype, t)
    with np.errstate(over="ignore"):  # a float64 reference past float32's range is inf
        want = t.dtype.type(want)
    if t.is_float and np.isnan(want):
        assert np.isnan(got)
    else:
        assert got == want, (got, want)
        if t.is_float and want == 0:
            assert np.signbit(got) == np.signbit(want)


# -- integers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("opcode", "py"),
    [
        (Opcode.ADD, lambda a, b: a + b),
        (Opcode.SUB, lambda a, b: a - b),
        (Opcode.MUL, lambda a, b: a * b),
    ],
)
@given(case=int_pair())
def test_integer_add_sub_mul_wrap_like_python_ints_modulo_width(
    opcode: Opcode, py: Any, case: Any
) -> None:
    t, a, b = case
    got = eval_op(opcode, {}, [a, b], t)
    exact = py(int(a), int(b)) % (1 << t.bits)
    assert int(got) % (1 << t.bits) == exact
    ufunc = {Opcode.ADD: np.add, Opcode.SUB: np.subtract, Opcode.MUL: np.multiply}[opcode]
    _same(got, _array_ref(ufunc, t, a, b), t)


@given(case=int_pair())
def test_integer_floordiv_and_floormod_match_numpy_including_zero_divisor(case: Any) -> None:
    t, a, b = case
    _same(eval_op(Opcode.FLOORDIV, {}, [a, b], t), _array_ref(np.floor_divide, t, a, b), t)
    _same(eval_op(Opcode.FLOORMOD, {}, [a, b], t), _array_ref(np.remainder, t, a, b), t)


@given(case=int_pair([I8, I16, I32, I64]))
def test_integer_floor_div_mod_follow_python_for_negative_operands(case: Any) -> None:
    t, a, b = case
    assume(int(b) != 0 and not (int(b) == -1 and int(a) == int(np.iinfo(t.dtype).min)))
    assert int(eval_op(Opcode.FLOORDIV, {}, [a, b], t)) == int(a) // int(b)
    assert int(eval_op(Opcode.FLOORMOD, {}, [a, b], t)) == int(a) % int(b)


@pytest.mark.parametrize("t", [I8, I16, I32, I64])
def test_int_min_floordiv_minus_one_wraps_and_mod_is_zero(t: ScalarType) -> None:
    lo, m1 = t.dtype.type(np.iinfo(t.dtype).min), t.dtype.type(-1)
    assert eval_op(Opcode.FLOORDIV, {}, [lo, m1], t) == lo
    assert eval_op(Opcode.FLOORMOD, {}, [lo, m1], t) == 0
    assert eval_op(Opcode.DIV, {}, [lo, m1], t) == lo
    assert eval_op(Opcode.ABS, {}, [lo], t) == lo
    assert eval_op(Opcode.NEG, {}, [lo], t) == lo


@given(case=int_pair())
def test_truncating_div_and_rem_are_c_division(case: Any) -> None:
    t, a, b = case
    q = eval_op(Opcode.DIV, {}, [a, b], t)
    r = eval_op(Opcode.REM, {}, [a, b], t)
    _same(r, _array_ref(np.fmod, t, a, b), t)  # C remainder: sign of the dividend, x % 0 == 0
    if int(b) == 0:
        assert q == 0
    else:
        assert (int(b) * int(q) + int(r) - int(a)) % (1 << t.bits) == 0
        assert abs(int(r)) < abs(int(b))


@given(case=int_pair(), e=st.integers(0, 70))
def test_integer_pow_is_exact_modulo_width(case: Any, e: int) -> None:
    t, a, _ = case
    if t.is_signed or e >= 0:
        b = t.dtype.type(e)
        got = eval_op(Opcode.POW, {}, [a, b], t)
        assert int(got) % (1 << t.bits) == pow(int(a), e, 1 << t.bits)
        _same(got, _array_ref(np.power, t, a, b), t)


@pytest.mark.parametrize(
    ("base", "exp", "want"), [(1, -5, 1), (-1, -3, -1), (-1, -4, 1), (2, -1, 0), (0, -1, 0)]
)
def test_integer_pow_with_negative_exponent(base: int, exp: int, want: int) -> None:
    for t in (I8, I64):
        assert eval_op(Opcode.POW, {}, [t.dtype.type(base), t.dtype.type(exp)], t) == want


@given(case=int_pair(), count=st.integers(-70, 70))
def test_shifts_match_numpy_for_every_count(case: Any, count: int) -> None:
    t, a, _ = case
    assume(t.is_signed or count >= 0)
    c = t.dtype.type(count) if -(1 << (t.bits - 1)) <= count < (1 << (t.bits - 1)) else None
    assume(c is not None)
    _same(eval_op(Opcode.SHL, {}, [a, c], t), _array_ref(np.left_shift, t, a, c), t)
    _same(eval_op(Opcode.SHR, {}, [a, c], t), _array_ref(np.right_shift, t, a, c), t)


@given(case=int_pair())
def test_integer_bitwise_and_unary_ops_match_numpy(case: Any) -> None:
    t, a, b = case
    for opcode, ufunc in [
        (Opcode.AND, np.bitwise_and),
        (Opcode.OR, np.bitwise_or),
        (Opcode.XOR, np.bitwise_xor),
    ]:
        _same(eval_op(opcode, {}, [a, b], t), _array_ref(ufunc, t, a, b), t)
    for opcode, ufunc in [
        (Opcode.NEG, np.negative),
        (Opcode.INVERT, np.invert),
        (Opcode.ABS, np.absolute),
    ]:
        _same(eval_op(opcode, {}, [a], t), _array_ref(ufunc, t, a), t)


# -- floats -----------------------------------------------------------------------------


@given(case=float_pair())
def test_float_arithmetic_stays_in_its_width_like_numpy(case: Any) -> None:
    t, a, b = case
    for opcode, ufunc in [
        (Opcode.ADD, np.add),
        (Opcode.SUB, np.subtract),
        (Opcode.MUL, np.multiply),
        (Opcode.TRUEDIV, np.true_divide),
        (Opcode.FLOORDIV, np.floor_divide),
        (Opcode.FLOORMOD, np.remainder),
    ]:
        _same(eval_op(opcode, {}, [a, b], t), _array_ref(ufunc, t, a, b), t)
    # pow is C pow; NumPy's vectorised f32 loop may differ by an ulp, libm's is the spec.
    got = eval_op(Opcode.POW, {}, [a, b], t)
    want = _array_ref(np.power, t, a, b)
    if np.isfinite(want) and want != 0:
        with np.errstate(all="ignore"):  # the spacing of the largest float overflows
            ulp = float(np.spacing(np.abs(want)))
        assert abs(float(got) - float(want)) <= 2 * ulp
    else:
        _same(got, want, t)
    _same(eval_op(Opcode.NEG, {}, [a], t), _array_ref(np.negative, t, a), t)
    _same(eval_op(Opcode.ABS, {}, [a], t), _array_ref(np.absolute, t, a), t)


@given(a=st.floats(width=32), b=st.floats(width=32))
def test_f32_add_and_mul_round_once_to_f32(a: float, b: float) -> None:
    # An f64 result rounded to f32 is the correctly rounded f32 result for + and *
    # (53 >= 2 * 24 + 2), so this is an independent reference for "no f64 intermediates".
    x, y = np.float32(a), np.float32(b)
    for opcode, exact in [(Opcode.ADD, a + b), (Opcode.MUL, a * b)]:
        got = eval_op(opcode, {}, [x, y], F32)
        assert type(got) is np.float32
        with np.errstate(all="ignore"):
            want = np.float32(exact)
        _same(got, want, F32)


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        (-math.inf, 0.5, math.inf),
        (-0.0, 0.5, 0.0),
        (1.0, math.nan, 1.0),
        (math.nan, 0.0, 1.0),
        (-8.0, 1 / 3, math.nan),
        (-2.0, 3.0, -8.0),
        (0.0, -1.0, math.inf),
    ],
)
def test_float_pow_is_c_pow_even_for_half_exponent(a: float, b: float, want: float) -> None:
    for t in FLOATS:
        _same(eval_op(Opcode.POW, {}, [t.dtype.type(a), t.dtype.type(b)], t), want, t)


def test_float_division_by_zero_gives_inf_and_nan() -> None:
    one, zero = np.float64(1.0), np.float64(0.0)
    assert eval_op(Opcode.TRUEDIV, {}, [one, zero], F64) == math.inf
    assert eval_op(Opcode.TRUEDIV, {}, [-one, zero], F64) == -math.inf
    assert math.isnan(eval_op(Opcode.TRUEDIV, {}, [zero, zero], F64))  # type: ignore[arg-type]
    assert math.isnan(eval_op(Opcode.FLOORMOD, {}, [one, zero], F64))  # type: ignore[arg-type]


@given(case=float_pair())
def test_min_max_follow_python_min_max_including_nan(case: Any) -> None:
    t, a, b = case
    for opcode, py in [(Opcode.MIN, min), (Opcode.MAX, max)]:
        got = eval_op(opcode, {}, [a, b], t)
        want = py(a, b)
        assert got is a or got is b
        _same(got, want, t)
        if not np.isnan(want):
            assert np.signbit(got) == np.signbit(want)  # min(0.0, -0.0) is the first one


@given(case=int_pair())
def test_integer_min_max_and_comparisons_follow_python(case: Any) -> None:
    t, a, b = case
    assert eval_op(Opcode.MIN, {}, [a, b], t) == min(int(a), int(b))
    assert eval_op(Opcode.MAX, {}, [a, b], t) == max(int(a), int(b))
    x, y = int(a), int(b)
    for opcode, want in [
        (Opcode.EQ, x == y),
        (Opcode.NE, x != y),
        (Opcode.LT, x < y),
        (Opcode.LE, x <= y),
        (Opcode.GT, x > y),
        (Opcode.GE, x >= y),
    ]:
        got = eval_op(opcode, {}, [a, b], BOOL)
        assert type(got) is np.bool_ and bool(got) == want


@given(case=float_pair())
def test_float_comparisons_with_nan_are_ieee(case: Any) -> None:
    t, a, b = case
    x, y = float(a), float(b)
    for opcode, want in [
        (Opcode.EQ, x == y),
        (Opcode.NE, x != y),
        (Opcode.LT, x < y),
        (Opcode.LE, x <= y),
        (Opcode.GT, x > y),
        (Opcode.GE, x >= y),
    ]:
        assert bool(eval_op(opcode, {}, [a, b], BOOL)) == want


# -- math -------------------------------------------------------------------------------

_UFUNC = {
    "sqrt": np.sqrt,
    "exp": np.exp,
    "exp2": np.exp2,
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "fabs": np.fabs,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "rint": np.rint,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "copysign": np.copysign,
    "fmod": np.fmod,
    "rsqrt": lambda x: np.ones_like(x) / np.sqrt(x),  # fastmath's rewrite of 1/sqrt(x)
}


@pytest.mark.parametrize("name", sorted(set(MATH_FUNCTIONS) - {"erf", "erfc", "gamma", "lgamma"}))
@given(case=float_pair())
def test_math_functions_match_numpy_ufuncs_in_operand_width(name: str, case: Any) -> None:
    t, a, b = case
    args = [a, b][: MATH_FUNCTIONS[name]]
    rt = BOOL if name in MATH_PREDICATES else t
    got = eval_op(Opcode.MATH, {"fn": name}, args, rt)
    with np.errstate(all="ignore"):
        want = _UFUNC[name](*(np.array([x]) for x in args))[0]
    _same(got, want, rt)


@pytest.mark.parametrize("name", ["erf", "erfc"])
@given(case=float_pair())
def test_erf_and_erfc_are_libm_rounded_to_operand_width(name: str, case: Any) -> None:
    t, a, _ = case
    got = eval_op(Opcode.MATH, {"fn": name}, [a], t)
    _same(got, getattr(math, name)(float(a)), t)


@pytest.mark.parametrize("name", ["gamma", "lgamma"])
@given(case=float_pair())
def test_gamma_and_lgamma_are_cpythons_where_it_returns_and_c_at_poles(
    name: str, case: Any
) -> None:
    t, a, _ = case
    got = eval_op(Opcode.MATH, {"fn": name}, [a], t)
    try:
        want = getattr(math, name)(float(a))
    except ValueError:  # the poles: C's tgamma/lgamma (NaN at -inf and negative integers)
        x = float(a)
        pole = x == 0 or x == -math.inf or x == math.floor(x)
        want = math.inf if name == "lgamma" else math.copysign(math.inf, x) if x == 0 else math.nan
        assert pole
    except OverflowError:
        want = math.inf
    _same(got, want, t)


@pytest.mark.parametrize(("x", "want"), [(0.5, 0.0), (1.5, 2.0), (2.5, 2.0), (-2.5, -2.0)])
def test_rint_rounds_half_to_even_like_python_round(x: float, want: float) -> None:
    for t in FLOATS:
        got = eval_op(Opcode.MATH, {"fn": "rint"}, [t.dtype.type(x)], t)
        assert got == want == round(x)


# -- casts, bools, constants, select ----------------------------------------------------


@given(src=st.sampled_from(SCALARS), dst=st.sampled_from(SCALARS), data=st.data())
def test_cast_is_numpy_astype(src: ScalarType, dst: ScalarType, data: st.DataObject) -> None:
    x = data.draw(from_dtype(src.dtype).map(src.dtype.type))
    if src.is_float and dst.is_int:
        # float -> int of NaN/inf/out of range is undefined; keep to exactly representable.
        info = np.iinfo(dst.dtype)
        assume(np.isfinite(x) and info.min <= math.trunc(float(x)) <= info.max)
    got = eval_op(Opcode.CAST, {}, [x], dst)
    with np.errstate(all="ignore"):
        want = np.array([x], dtype=src.dtype).astype(dst.dtype)[0]
    _same(got, want, dst)


def test_cast_to_bool_is_nonzero_and_bool_to_number_is_zero_one() -> None:
    assert eval_op(Opcode.CAST, {}, [np.float32(math.nan)], BOOL) == np.True_
    assert eval_op(Opcode.CAST, {}, [np.float64(-0.0)], BOOL) == np.False_
    assert eval_op(Opcode.CAST, {}, [np.int8(-128)], BOOL) == np.True_
    assert eval_op(Opcode.CAST, {}, [np.True_], F32) == np.float32(1.0)
    assert eval_op(Opcode.CAST, {}, [np.float64(-2.9)], I32) == -2  # truncates toward zero


@given(a=st.booleans(), b=st.booleans())
def test_bool_logic_ops(a: bool, b: bool) -> None:
    x, y = np.bool_(a), np.bool_(b)
    assert eval_op(Opcode.AND, {}, [x, y], BOOL) == (a and b)
    assert eval_op(Opcode.OR, {}, [x, y], BOOL) == (a or b)
    assert eval_op(Opcode.XOR, {}, [x, y], BOOL) == (a != b)
    assert eval_op(Opcode.NOT, {}, [x], BOOL) == (not a)
    assert eval_op(Opcode.MIN, {}, [x, y], BOOL) == min(a, b)
    assert eval_op(Opcode.MAX, {}, [x, y], BOOL) == max(a, b)


@pytest.mark.parametrize(
    ("value", "t"),
    [(True, BOOL), (-3, I8), (2**64 - 1, U64), (0.1, F32), (math.nan, F64), (-math.inf, F32)],
)
def test_const_gives_a_scalar_of_its_type(value: Any, t: ScalarType) -> None:
    got = eval_op(Opcode.CONST, {"value": value}, [], t)
    _same(got, value, t)


def test_select_picks_an_arm_without_conversion() -> None:
    a, b = np.int16(3), np.int16(-4)
    assert eval_op(Opcode.SELECT, {}, [np.True_, a, b], I16) is a
    assert eval_op(Opcode.SELECT, {}, [np.False_, a, b], I16) is b


@pytest.mark.parametrize(
    ("opcode", "operands", "t"),
    [
        (Opcode.DIV, [np.float32(1), np.float32(2)], F32),
        (Opcode.SHL, [np.float64(1), np.float64(2)], F64),
        (Opcode.ADD, [np.True_, np.True_], BOOL),
        (Opcode.NOT, [np.int32(1)], I32),
        (Opcode.LOAD, [np.int64(0)], F32),
        (Opcode.ADD, [np.float64(1), np.float64(2)], F32),  # operand/result type mismatch
    ],
)
def test_undefined_combinations_raise_semantics_error(
    opcode: Opcode, operands: list[np.generic], t: ScalarType
) -> None:
    with pytest.raises(SemanticsError):
        eval_op(opcode, {}, operands, t)
