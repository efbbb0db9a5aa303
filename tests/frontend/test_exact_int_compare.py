"""NumPy 2 compares a NumPy integer with a Python int exactly, whatever the int's value
(``np.uint8(200) > -3`` is True, ``np.uint64(2**64 - 1) != -1`` is True): every integer
dtype, every comparison, both operand orders, constant and computed Python ints, checked
against NumPy in the IR interpreter (the corpus runs such programs on every target)."""

from __future__ import annotations

import linecache
from typing import Any

import numpy as np
import pytest

from offload.frontend.lower import fetch_captures, lower
from offload.ir.interp import compute

pytestmark = pytest.mark.unit

DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
OPS = ["<", "<=", ">", ">=", "==", "!="]
PY_INTS = [-(2**63), -(2**40), -300, -129, -1, 0, 1, 127, 128, 255, 256, 2**31, 2**63 - 1]


def _values(dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.array([info.min, info.min + 1, 0, 1, 100, info.max - 1, info.max], dtype=dtype)


def _define(source: str, arr: np.ndarray) -> Any:
    name = f"<exact-compare-{len(linecache.cache)}-{id(arr)}>"
    text = f"fn = {source}\n"
    linecache.cache[name] = (len(text), None, [text], name)
    ns: dict[str, Any] = {"arr": arr}
    exec(compile(text, name, "exec"), ns)
    return ns["fn"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", PY_INTS)
@pytest.mark.parametrize("computed", [False, True], ids=["constant", "computed"])
def test_numpy_int_compared_with_a_python_int_is_exact(dtype: str, k: int, computed: bool) -> None:
    arr = _values(dtype)
    py = f"(i - i + {k})" if computed else f"({k})"
    parts = [f"arr[i] {op} {py}" for op in OPS] + [f"{py} {op} arr[i]" for op in OPS]
    fn = _define(f"lambda i: ({', '.join(parts)})", arr)
    lowered = lower(fn, 1)
    got = compute(lowered.ir, (len(arr),), fetch_captures(fn, lowered))
    for r, g in enumerate(got):
        want = np.array([fn(i)[r] for i in range(len(arr))])
        assert g.dtype == want.dtype == np.bool_
        np.testing.assert_array_equal(g, want, err_msg=f"{parts[r]} with {dtype}")
