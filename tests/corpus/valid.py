"""A corpus of valid element functions covering every construct of DESIGN §2.

Every backend (and the IR interpreter) is tested against ``reference(program)``: CPython
running the original function at every index. Programs keep their values where CPython and
int64/NumPy agree (no int64 overflow, no division by zero, no math domain errors), and every
shape is tiny (<= 64 elements) so that simulators can run them.

``Program.dtypes`` is the result dtype the language's typing rules (NEP 50) give; it is an
oracle written by hand, independent of the frontend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tests.corpus import valid_programs as _p


@dataclass(frozen=True)
class Program:
    """One valid element function and what it should produce."""

    name: str
    fn: Callable[..., Any]
    shape: tuple[int, ...]
    captures: dict[str, object] = field(default_factory=dict)
    """Documentation only: the captured values the fn reads (it closes over them itself)."""
    dtypes: tuple[str, ...] = ("float64",)
    """Result dtypes (one per element of a tuple return)."""

    def __repr__(self) -> str:  # short ids in pytest parametrisation
        return self.name


def _prog(
    name: str, shape: tuple[int, ...], dtypes: str | tuple[str, ...], **caps: object
) -> Program:
    fn = getattr(_p, name)
    dts = (dtypes,) if isinstance(dtypes, str) else dtypes
    return Program(name, fn, shape, dict(caps), dts)


I64, F64, F32, I32, B = "int64", "float64", "float32", "int32", "bool"

PROGRAMS: list[Program] = [
    _prog("arith_int", (4, 5), I64),
    _prog("arith_mixed_int_float", (4, 4), F64),
    _prog("bool_plus_bool_is_int", (4, 4), I64),
    _prog("floor_div_mod_negative_ints", (10, 5), (I64, I64)),
    _prog("floor_div_mod_negative_floats", (16,), (F64, F64), A1=_p.A1),
    _prog("power_ops", (3, 4), (I64, F64, F64)),
    _prog("bitwise_ops", (4, 4), (I64, I64, I64, I64, I64)),
    _prog("chained_comparisons", (5, 5), (B, B)),
    _prog("short_circuit_and_or", (5, 4), (I64, B)),
    _prog("not_operator", (4, 3), (B, B)),
    _prog("conditional_expression", (16,), F64, A1=_p.A1),
    _prog("if_elif_else", (16,), I64, A1=_p.A1),
    _prog("for_range_sum", (6, 3), I64),
    _prog("for_range_negative_step", (8,), I64),
    _prog("for_range_variable_step", (5, 4), (I64, I64)),
    _prog("while_loop_collatz", (12,), I64),
    _prog("break_and_continue", (10,), I64),
    _prog("early_returns", (16,), F64, A1=_p.A1),
    _prog("augmented_assignment", (4, 4), (I64, F64)),
    _prog("tuple_unpacking_fib", (12,), I64),
    _prog("tuple_return_soa", (3, 4), (I64, F64, B)),
    _prog("min_max_abs", (4, 4), (I64, F64, I64, F64)),
    _prog("int_float_bool_round", (16,), (I64, F64, B, I64, I64), A1=_p.A1),
    _prog("math_functions", (16,), (F64, F64, F64), POS=_p.POS),
    _prog("math_int_results", (16,), (I64, I64, I64, F64), A1=_p.A1),
    _prog("numpy_ufuncs_keep_float32", (12,), (F32, F32, F32, F32), F32_1=_p.F32_1),
    _prog("numpy_where_minimum_maximum", (12,), (F32, F32, F64), F32_1=_p.F32_1),
    _prog("np_float32_cast", (4, 4), F32),
    _prog("float32_array_stays_float32", (12,), (F32, F32, B), F32_1=_p.F32_1),
    _prog("int32_array_arithmetic", (4, 6), (I32, I32, I32, F64, I64), I32_2=_p.I32_2),
    _prog("int64_array_floor_ops", (16,), (I64, I64), I64_1=_p.I64_1),
    _prog("negative_indices", (4, 5), (F64, F32, F64), A1=_p.A1, F32_2=_p.F32_2, A3=_p.A3),
    _prog("rank3_read", (2, 3, 4), F64, A3=_p.A3),
    _prog("rank4_read", (2, 2, 3, 2), F64, A4=_p.A4),
    _prog("rank0_scalar", (), F64, A1=_p.A1, K_FLOAT=_p.K_FLOAT),
    _prog("shape_len_ndim", (3, 2), I64, A3=_p.A3, A1=_p.A1),
    _prog("captured_python_scalars", (8,), (I64, F64, B), K_INT=_p.K_INT, K_FLOAT=_p.K_FLOAT),
    _prog("captured_numpy_scalars", (12,), (F32, I32, F64), S_F32=_p.S_F32, S_I32=_p.S_I32),
    _prog("helper_nested_calls", (4, 4), F64, A1=_p.A1),
    _prog("helper_called_with_two_types", (8,), (I64, F64, F32), F32_1=_p.F32_1),
    _prog("lambda_element_function", (16,), F64, A1=_p.A1),
    _prog("lambda_helper", (16,), F64, A1=_p.A1),
    _prog("closure_scalar", (8,), F64, k=3.5),
    _prog("closure_array", (3, 4), I64),
    _prog("nested_loops", (4, 4), I64),
    _prog("loop_variable_promotes_to_float", (5,), F64),
    _prog("divmod_and_pow_builtins", (6, 3), (I64, I64, I64)),
    _prog("bool_array_logic", (10,), (B, I64), B1=_p.B1),
    _prog("clamped_stencil", (4, 5), F32, F32_2=_p.F32_2),
    _prog("early_return_in_loop", (16,), I64, A1=_p.A1),
    _prog("while_with_continue", (6,), I64),
    _prog("nested_conditional_expressions", (5, 5), I64),
    _prog("module_constants", (6,), (F64, F64)),
    _prog("true_division", (4, 4), (F64, F64)),
    _prog("mixed_array_promotion", (4, 5), (F64, I64, F64), F32_2=_p.F32_2, I32_2=_p.I32_2),
    _prog("numpy_scalar_casts", (4, 6), (I32, F64, B, I64), I32_2=_p.I32_2),
    _prog("round_half_to_even", (9,), (I64, F64)),
    _prog("short_circuit_guards_division", (5, 5), B),
    _prog("sign_of_mod_with_int32", (4, 6), (I32, I32), I32_2=_p.I32_2),
    _prog(
        "compare_with_out_of_range_python_ints",
        (4,),
        (B, B, B, B, B, B, B),
        U8_1=_p.U8_1,
        U64_1=_p.U64_1,
    ),
    _prog("rounding_keeps_bool_and_int_types", (10,), (B, B, "uint8", I64), B1=_p.B1),
    _prog("float32_constant_truth", (3,), (F32, B)),
    _prog("bool_exponent_and_counter_after_loop", (5,), (I64, I64, I64)),
]


def by_name(name: str) -> Program:
    """The corpus program called ``name``."""
    for program in PROGRAMS:
        if program.name == name:
            return program
    raise KeyError(name)


def reference(program: Program) -> tuple[np.ndarray, ...]:
    """Run ``program.fn`` with CPython at every index; store into arrays of its dtypes."""
    outs = tuple(np.zeros(program.shape, dtype=np.dtype(d)) for d in program.dtypes)
    for index in np.ndindex(*program.shape):
        value = program.fn(*index)
        values = value if isinstance(value, tuple) else (value,)
        if len(values) != len(outs):
            raise AssertionError(f"{program.name}: {len(values)} results, expected {len(outs)}")
        for out, v in zip(outs, values, strict=True):
            out[index] = v
    return outs


def assert_results_match(program: Program, got: tuple[np.ndarray, ...]) -> None:
    """Check ``got`` against ``reference(program)``: dtypes exactly, values exactly for ints
    and bools, to a few ulps for floats (math functions may differ in the last bit)."""
    want = reference(program)
    assert len(got) == len(want), f"{program.name}: {len(got)} results, expected {len(want)}"
    for k, (g_raw, w) in enumerate(zip(got, want, strict=True)):
        g = np.asarray(g_raw)
        assert g.dtype == w.dtype, f"{program.name}[{k}]: dtype {g.dtype}, expected {w.dtype}"
        assert g.shape == w.shape, f"{program.name}[{k}]: shape {g.shape}, expected {w.shape}"
        if w.dtype.kind == "f":
            rtol = 4e-7 if w.dtype == np.float32 else 1e-14
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, err_msg=program.name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=program.name)


__all__ = ["PROGRAMS", "Program", "assert_results_match", "by_name", "reference"]
