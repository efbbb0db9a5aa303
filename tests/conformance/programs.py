"""Element functions whose captured inputs Hypothesis draws, run on every backend.

Each program reads its inputs from the module-level ``ARGS`` arrays (captured arrays, so
one compiled kernel serves every drawn example) and is compared element by element with
CPython running the same function.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

N = 6
I64 = np.zeros(N, dtype=np.int64)
J64 = np.ones(N, dtype=np.int64)
I32 = np.zeros(N, dtype=np.int32)
F32 = np.zeros(N, dtype=np.float32)
F64 = np.zeros(N, dtype=np.float64)


def floor_div_mod(i):
    x = I64[i]
    y = J64[i]
    if y == 0:
        return 0, 0
    return x // y, x % y


def wrap_arith(i):
    x = I64[i]
    y = J64[i]
    return x * y + x - y * 3


def mixed_promotion(i):
    f = F32[i]
    return f * 2.5 + I32[i], f / 3, F64[i] * f


def int32_stays_int32(i):
    a = I32[i]
    return a + 1, a * 3 - 7, a // 5, a % 7


def rounding_and_builtins(i):
    x = F64[i]
    return round(x), int(x), abs(x), min(x, 1.5), max(x, -2.0, F32[i])


def branchy(i):
    x = F32[i]
    if x > 1.0 and I32[i] % 2 == 0:
        r = x * x
    elif x < -1.0 or I32[i] < 0:
        r = -x
    else:
        r = x + 0.5
    return r if 0 < I32[i] < 100 else r * 2


def loops(i):
    n = I32[i] % 17
    acc = 0
    k = n
    while k > 0:
        if k % 3 == 0:
            k -= 1
            continue
        acc += k * k
        if acc > 500:
            break
        k -= 1
    for j in range(n, -3, -2):
        acc -= j
    return acc


def bit_ops(i):
    x = I64[i]
    s = J64[i] % 70
    return (x & 0xFF) | (x ^ 0x55) << 2, x >> 3, ~x, s


def math_funcs(i):
    x = abs(F64[i]) + 0.5
    f = np.float32(abs(F32[i]) + 0.25)
    return math.sqrt(x), math.log(x), np.sqrt(f), np.exp(np.float32(-f)), math.floor(x)


@dataclass(frozen=True)
class Case:
    fn: Callable[..., Any]
    draw: st.SearchStrategy[dict[str, np.ndarray]]
    """Arrays to copy into the module's ARGS before a run."""
    ulps: int = 0
    """Float tolerance against CPython (0: exact)."""


def _ints(dtype: Any, lo: int, hi: int) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(dtype, N, elements=st.integers(lo, hi))


def _floats(dtype: Any, bound: float) -> st.SearchStrategy[np.ndarray]:
    width = 32 if np.dtype(dtype) == np.float32 else 64
    return hnp.arrays(dtype, N, elements=st.floats(-bound, bound, allow_nan=False, width=width))


BIG = 2**40
CASES: dict[str, Case] = {
    "floor_div_mod": Case(
        floor_div_mod,
        st.fixed_dictionaries({"I64": _ints(np.int64, -BIG, BIG), "J64": _ints(np.int64, -50, 50)}),
    ),
    "wrap_arith": Case(
        wrap_arith,
        st.fixed_dictionaries(
            {
                "I64": _ints(np.int64, -(2**63), 2**63 - 1),
                "J64": _ints(np.int64, -(2**63), 2**63 - 1),
            }
        ),
    ),
    "mixed_promotion": Case(
        mixed_promotion,
        st.fixed_dictionaries(
            {
                "F32": _floats(np.float32, 1e6),
                "I32": _ints(np.int32, -1000, 1000),
                "F64": _floats(np.float64, 1e6),
            }
        ),
    ),
    "int32_stays_int32": Case(
        int32_stays_int32, st.fixed_dictionaries({"I32": _ints(np.int32, -(2**31), 2**31 - 1)})
    ),
    "rounding_and_builtins": Case(
        rounding_and_builtins,
        st.fixed_dictionaries({"F64": _floats(np.float64, 1e9), "F32": _floats(np.float32, 1e3)}),
    ),
    "branchy": Case(
        branchy,
        st.fixed_dictionaries(
            {"F32": _floats(np.float32, 10.0), "I32": _ints(np.int32, -200, 200)}
        ),
    ),
    "loops": Case(loops, st.fixed_dictionaries({"I32": _ints(np.int32, -(2**31), 2**31 - 1)})),
    "bit_ops": Case(
        bit_ops,
        st.fixed_dictionaries(
            {"I64": _ints(np.int64, -(2**62), 2**62), "J64": _ints(np.int64, 0, 2**40)}
        ),
    ),
    "math_funcs": Case(
        math_funcs,
        st.fixed_dictionaries({"F64": _floats(np.float64, 1e6), "F32": _floats(np.float32, 50.0)}),
        # CUDA's expf is within 2 ulp of the exact value (CUDA C++ Programming Guide,
        # single-precision functions), NumPy's float32 exp within about 2 too: the two may
        # differ by 4 (the H100 run of 2026-11-21 drew exp(-19.55): 3 ulp apart).
        ulps=4,
    ),
}


def load(arrays: dict[str, np.ndarray]) -> None:
    """Copy drawn inputs into the captured arrays (same objects: no recompilation)."""
    for name, values in arrays.items():
        globals()[name][...] = values


def wrap64(value: Any) -> Any:
    """CPython's unbounded int wrapped to int64, as NumPy arithmetic does."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value + 2**63) % 2**64 - 2**63
    return value


def reference(fn: Callable[..., Any], dtypes: list[np.dtype[Any]]) -> list[np.ndarray]:
    """CPython over every index, stored as the backends' result dtypes."""
    rows = []
    with np.errstate(all="ignore"):
        for i in range(N):
            r = fn(i)
            rows.append(r if isinstance(r, tuple) else (r,))
    return [np.array([wrap64(row[k]) for row in rows]).astype(dt) for k, dt in enumerate(dtypes)]


def assert_close(got: np.ndarray, want: np.ndarray, ulps: int, what: str) -> None:
    if got.dtype.kind == "f" and ulps:
        np.testing.assert_array_max_ulp(got, want, maxulp=ulps)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)
