"""The element functions of the valid corpus (see ``valid.py`` for shapes and dtypes).

They are plain module-level functions on purpose: captured arrays and scalars are globals
of this module (``("global", name)`` capture paths); ``closure_*`` programs capture cells.
"""
# ruff: noqa: PLR1714, PLR0124, SIM102, PLW0127, E741

from __future__ import annotations

import math
from typing import Any

import numpy as np

A1 = np.random.default_rng(1).standard_normal(16)
F32_1 = np.random.default_rng(2).standard_normal(12).astype(np.float32)
F32_2 = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
I32_2 = np.random.default_rng(4).integers(-50, 50, (4, 6)).astype(np.int32)
I64_1 = np.random.default_rng(5).integers(-100, 100, 16)
A3 = np.random.default_rng(6).standard_normal((2, 3, 4))
A4 = np.random.default_rng(7).standard_normal((2, 2, 3, 2))
B1 = np.random.default_rng(8).random(10) > 0.5
POS = np.random.default_rng(9).random(16) + 0.5
U8_1 = np.array([5, 0, 200, 255], dtype=np.uint8)
U64_1 = np.array([5, 0, 2**64 - 1, 3], dtype=np.uint64)

K_INT = 7
K_FLOAT = 0.25
S_F32 = np.float32(1.5)
S_I32 = np.int32(-3)


def arith_int(i: int, j: int) -> Any:
    return i * 3 - j + 7 - (i - j) * (j + 2)


def arith_mixed_int_float(i: int, j: int) -> Any:
    return i * 0.5 + j / 4 - 1


def bool_plus_bool_is_int(i: int, j: int) -> Any:
    return (i > 1) + (j > 2)


def floor_div_mod_negative_ints(i: int, j: int) -> Any:
    x = i - 5
    y = j - 2
    if y == 0:
        y = 3
    return x // y, x % y


def floor_div_mod_negative_floats(i: int) -> Any:
    x = A1[i] * 3.0
    return x // 0.7, x % -0.7


def power_ops(i: int, j: int) -> Any:
    return i**2 + j**3, (i + 1.5) ** 0.5, 2.0**-j


def bitwise_ops(i: int, j: int) -> Any:
    x = i * 7 + j - 9
    return (x & 5) | (x ^ 3), x << 2, ~x, x >> 1, (x & 0xF) ^ j


def chained_comparisons(i: int, j: int) -> Any:
    return 0 < i - j <= 2, i == j != 2


def short_circuit_and_or(i: int, j: int) -> Any:
    return (i > 2 and j) or -1, (i > 1 or j > 2) and not (i == j)


def not_operator(i: int, j: int) -> Any:
    return not (i > j), not i


def conditional_expression(i: int) -> Any:
    return A1[i] * 2.0 if A1[i] > 0 else -A1[i]


def if_elif_else(i: int) -> Any:
    x = A1[i]
    if x < -1.0:
        r = -2
    elif x < 0.0:
        r = -1
    elif x < 1.0:
        r = 1
    else:
        r = 2
    return r * 10 + i


def for_range_sum(i: int, j: int) -> Any:
    s = 0
    for k in range(i):
        s += k * j
    for k in range(j, i):
        s -= k
    return s


def for_range_negative_step(i: int) -> Any:
    s = 0
    for k in range(10, i, -2):
        s = s * 3 + k
    return s


def for_range_variable_step(i: int, j: int) -> Any:
    s = 0
    for k in range(0, 12, j + 1):
        s += k
    t = 0
    for k in range(i, -5, -(j + 1)):
        t = t * 2 + k
    return s, t


def while_loop_collatz(i: int) -> Any:
    n = i + 1
    steps = 0
    while n != 1 and steps < 100:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def break_and_continue(i: int) -> Any:
    s = 0
    for k in range(20):
        if k % 2 == 1:
            continue
        if k > i + 4:
            break
        s += k
    return s


def early_returns(i: int) -> Any:
    x = A1[i]
    if x > 1.0:
        return 1.0
    if x < -1.0:
        return -1.0
    return x * x


def augmented_assignment(i: int, j: int) -> Any:
    x = i + 10
    x += j
    x *= 3
    x -= i
    x //= 4
    x %= 7
    x **= 2
    x |= j
    x ^= 1
    x <<= 1
    y = 1.5
    y *= i
    y /= j + 1
    y -= 0.25
    return x, y


def tuple_unpacking_fib(i: int) -> Any:
    a, b = 0, 1
    for _ in range(i):
        a, b = b, a + b
    return a


def tuple_return_soa(i: int, j: int) -> Any:
    return i + j, i * 0.5, i > j


def min_max_abs(i: int, j: int) -> Any:
    return min(i, j, 3), max(i * 0.5, j * 0.75), abs(i - j * 2), abs(j - 2.5)


def int_float_bool_round(i: int) -> Any:
    x = A1[i] * 10.0
    return int(x), float(i), bool(i % 3), round(x), round(i - 4)


def math_functions(i: int) -> Any:
    x = POS[i]
    return (
        math.sqrt(x) + math.exp(-x) + math.log(x),
        math.sin(x) * math.cos(x) + math.tanh(x),
        math.atan2(x, i - 3.5) + math.hypot(x, 2.0),
    )


def math_int_results(i: int) -> Any:
    x = A1[i] * 4.0
    return math.floor(x), math.ceil(x), math.trunc(x), math.fabs(x)


def numpy_ufuncs_keep_float32(i: int) -> Any:
    x = F32_1[i]
    return np.sqrt(np.abs(x)), np.exp(x), np.floor(x * 3.0), np.sin(x) + np.cos(x)


def numpy_where_minimum_maximum(i: int) -> Any:
    x = F32_1[i]
    return np.where(x > 0, x, -x), np.minimum(x, 0.5), np.maximum(x, np.float64(0.25))


def np_float32_cast(i: int, j: int) -> Any:
    return np.float32(i) * 0.1 + np.float32(j)


def float32_array_stays_float32(i: int) -> Any:
    x = F32_1[i]
    return x * 2.0 + 1, x / 3, x > 0.25


def int32_array_arithmetic(i: int, j: int) -> Any:
    x = I32_2[i, j]
    return x + 1, x // 7, x * j, x * 1.5, x + I64_1[j]


def int64_array_floor_ops(i: int) -> Any:
    x = I64_1[i]
    return x // -7, x % -7


def negative_indices(i: int, j: int) -> Any:
    return A1[-1 - i] + A1[-16], F32_2[-1, -j - 1], A3[i - 2, -1, j - 4]


def rank3_read(i: int, j: int, k: int) -> Any:
    return A3[i, j, k] * 2.0 - A3[1 - i, 2 - j, k]


def rank4_read(i: int, j: int, k: int, l: int) -> Any:
    return A4[i, j, k, l] + A4[j, i, 2 - k, l] * 0.5


def rank0_scalar() -> Any:
    return A1[3] + K_FLOAT


def shape_len_ndim(i: int, j: int) -> Any:
    return A3.shape[2] * i + len(A1) + A3.ndim + A3.shape[-1] + j


def captured_python_scalars(i: int) -> Any:
    return i * K_INT, i * K_FLOAT, i > K_INT // 2


def captured_numpy_scalars(i: int) -> Any:
    return S_F32 * F32_1[i], S_I32 + 1, S_I32 * 0.5


def _square(x: Any) -> Any:
    return x * x


def _poly(x: Any, y: Any) -> Any:
    return _square(x) + 2 * x * y + _square(y)


def helper_nested_calls(i: int, j: int) -> Any:
    return _poly(A1[i], A1[j]) - _square(i)


def helper_called_with_two_types(i: int) -> Any:
    return _square(i), _square(i * 0.5), _square(F32_1[i])


lambda_element_function = lambda i: A1[i] * 2.0 - i  # noqa: E731

_cube = lambda x: x * x * x  # noqa: E731


def lambda_helper(i: int) -> Any:
    return _cube(A1[i]) + _cube(2)


def _make_closure_scalar(k: float) -> Any:
    def closure_scalar(i: int) -> Any:
        return i * k + 1

    return closure_scalar


closure_scalar = _make_closure_scalar(3.5)


def _make_closure_array() -> Any:
    table = np.arange(12).reshape(3, 4) - 5

    def closure_array(i: int, j: int) -> Any:
        return table[i, j] * table[2 - i, 3 - j]

    return closure_array


closure_array = _make_closure_array()


def nested_loops(i: int, j: int) -> Any:
    s = 0
    for a in range(i + 1):
        for b in range(j + 1):
            if (a + b) % 3 == 0:
                continue
            s += a * b + 1
    return s


def loop_variable_promotes_to_float(i: int) -> Any:
    x = 0
    for _ in range(i):
        x = x + 0.5
    return x


def divmod_and_pow_builtins(i: int, j: int) -> Any:
    q, r = divmod(i - 3, j + 1)
    return q, r, pow(i, j)


def bool_array_logic(i: int) -> Any:
    b = B1[i]
    return bool(b and i > 3), int(b) + int(not b) * 2


def clamped_stencil(i: int, j: int) -> Any:
    up = F32_2[max(i - 1, 0), j]
    down = F32_2[min(i + 1, 3), j]
    left = F32_2[i, max(j - 1, 0)]
    right = F32_2[i, min(j + 1, 4)]
    return (up + down + left + right) * 0.25 - F32_2[i, j]


def early_return_in_loop(i: int) -> Any:
    for k in range(16):
        if A1[k] > A1[i]:
            return k
    return -1


def while_with_continue(i: int) -> Any:
    k = 0
    s = 0
    while k < 10:
        k += 1
        if k % 3 == i % 3:
            continue
        s += k
    return s


def nested_conditional_expressions(i: int, j: int) -> Any:
    return (1 if i < j else 2) if i != 2 else (3 if j > 2 else 4)


def module_constants(i: int) -> Any:
    return math.pi * i + math.e, np.pi / (i + 1)


def true_division(i: int, j: int) -> Any:
    return i / (j + 1), (i - 2) / 3


def mixed_array_promotion(i: int, j: int) -> Any:
    return F32_2[i, j] + A1[j], I32_2[i, j] + I64_1[i], F32_2[i, j] * I32_2[i, j]


def numpy_scalar_casts(i: int, j: int) -> Any:
    return (
        np.int32(i) + I32_2[i, j],
        np.float64(I32_2[i, j]) / 8,
        np.bool_(j - 2),
        np.int64(i) * np.int64(j),
    )


def round_half_to_even(i: int) -> Any:
    x = (i - 4) * 0.5
    return round(x), np.rint(x)


def short_circuit_guards_division(i: int, j: int) -> Any:
    return j != 0 and i // j > 1


def sign_of_mod_with_int32(i: int, j: int) -> Any:
    x = I32_2[i, j]
    y = np.int32(j - 3) if j != 3 else np.int32(5)
    return x % y, x // y


def compare_with_out_of_range_python_ints(i: int) -> Any:
    # NumPy 2 compares a NumPy integer with any Python int exactly (issue 19).
    return (
        U8_1[i] > i - 3,
        U8_1[i] > -1,
        -300 < U8_1[i],
        U8_1[i] == i + 253,
        U64_1[i] >= i - 2,
        U64_1[i] < -1,
        U64_1[i] != i - 1,
    )


def rounding_keeps_bool_and_int_types(i: int) -> Any:
    # NumPy 2: floor/ceil/trunc of a bool or an integer are exact and keep its type.
    return np.floor(B1[i]) | B1[i], np.ceil(B1[i]), np.trunc(U8_1[i % 4]), np.floor(i - 3)


def float32_constant_truth(i: int) -> Any:
    # np.float32(1e-300) is 0.0 in float32: false; np.float32(1e-46) likewise.
    return (np.float32(1e-300) or np.float32(-1.0)) + i, not np.float32(1e-46)


def bool_exponent_and_counter_after_loop(i: int) -> Any:
    for k in range(3):
        pass
    return i ** (i > 1), i + k, np.int64(-9223372036854775808) + i
