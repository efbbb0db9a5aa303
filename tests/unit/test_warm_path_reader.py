"""``make_reader``: the warm lane's one call that re-reads captured values returns them only
while they have the types the kernel was compiled for and the resolved objects are
unchanged; anything else is ``None`` (the full path then decides)."""

from __future__ import annotations

import math
import types

import numpy as np
import pytest

from offload.runtime.reader import make_reader

pytestmark = pytest.mark.unit

arr = np.arange(4.0)
n = 3


def closure_and_globals():
    k = np.float32(2.0)

    def f(i):
        return arr[i] * k + n + math.floor(i)

    return f


CLOSURE_K = (("closure", 0),)
GLOBAL_ARR = (("global", "arr"),)
GLOBAL_N = (("global", "n"),)
MATH = (("global", "math"),)


def reader_for(f):
    return make_reader(
        [CLOSURE_K, GLOBAL_ARR, GLOBAL_N],
        [np.float32, np.ndarray, int],
        [(1, np.dtype(np.float64), 1)],
        [(MATH, math)],
    )


@pytest.fixture
def restore():
    global arr, n, math
    saved = n, math
    arr = np.arange(4.0)  # a fresh object: one test reshapes it in place
    yield
    n, math = saved
    arr = np.arange(4.0)


def test_reader_returns_the_current_values_in_capture_order(restore):
    global n
    f = closure_and_globals()
    read = reader_for(f)
    values = read(f)
    assert values is not None and values[0] == np.float32(2.0) and values[1] is arr
    n = 7
    assert read(f)[2] == 7


@pytest.mark.parametrize(
    "change",
    [
        "array_dtype",
        "array_rank_in_place",
        "int_to_float",
        "int_beyond_int64",
        "module_rebound",
        "global_deleted",
    ],
)
def test_reader_refuses_values_of_other_types_and_changed_resolutions(change, restore):
    global arr, n, math
    f = closure_and_globals()
    read = reader_for(f)
    assert read(f) is not None
    if change == "array_dtype":
        arr = np.arange(4, dtype=np.float32)
    elif change == "array_rank_in_place":
        arr.shape = (2, 2)
    elif change == "int_to_float":
        n = 3.0
    elif change == "int_beyond_int64":
        n = 2**63
    elif change == "module_rebound":
        math = types.ModuleType("math")
    else:
        del globals()["n"]
    assert read(f) is None


def test_reader_refuses_a_subclass_instance_where_the_exact_type_was_compiled():
    class Sub(np.ndarray):
        pass

    f = closure_and_globals()
    read = make_reader([GLOBAL_ARR], [np.ndarray], [(0, np.dtype(np.float64), 1)])
    assert read(f) is not None
    g = types.FunctionType(
        f.__code__, {**f.__globals__, "arr": arr.view(Sub)}, None, None, f.__closure__
    )
    assert read(g) is None


def test_reader_of_an_emptied_cell_is_none():
    def make():
        k = 1.0

        def f(i):
            return i + k  # noqa: F821  (k is deleted below: the cell is empty)

        del k
        return f

    read = make_reader([CLOSURE_K], [float], [])
    assert read(make()) is None


def test_reader_of_attribute_and_constant_paths():
    root = types.SimpleNamespace(a=types.SimpleNamespace(b=np.int32(5)))
    read = make_reader([(("attr", "a"), ("attr", "b")), (("const", 2.5),)], [np.int32, float], [])
    assert read(root) == [np.int32(5), 2.5]
    root.a.b = np.int64(5)
    assert read(root) is None
