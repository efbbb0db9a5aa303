"""``offload.frontend.reader``: the generated functions that read a call's captured values.

A reader returns the current values only while they have the types the kernel was compiled
for, the resolved helpers and modules are unchanged and pinned contents are the same;
anything else is ``None`` (the full path then decides). A fetcher is the same reads with
nothing checked."""

from __future__ import annotations

import math
import types

import numpy as np
import pytest

from offload.frontend.captures import CapturePath
from offload.frontend.reader import make_fetcher, make_reader, make_resolution_test, type_tests

pytestmark = pytest.mark.unit

arr = np.arange(4.0)
n = 3


def helper(x):
    return x


def closure_and_globals():
    k = np.float32(2.0)

    def f(i):
        return helper(arr[i]) * k + n + math.floor(i)

    return f


CLOSURE_K = CapturePath((("closure", 0),))
GLOBAL_ARR = CapturePath((("global", "arr"),))
GLOBAL_N = CapturePath((("global", "n"),))
MATH = CapturePath((("global", "math"),))
HELPER = CapturePath((("global", "helper"),))
PATHS = [CLOSURE_K, GLOBAL_ARR, GLOBAL_N]


def reader_for(f):
    read = make_reader(PATHS, make_fetcher(PATHS)(f), [(MATH, math), (HELPER, helper)])
    assert read is not None
    return read


@pytest.fixture
def restore():
    global arr, n, math, helper
    saved = n, math, helper
    arr = np.arange(4.0)  # a fresh object: one test reshapes it in place
    yield
    n, math, helper = saved
    arr = np.arange(4.0)


def test_reader_returns_the_current_values_in_capture_order(restore):
    global n
    f = closure_and_globals()
    read = reader_for(f)
    values = read(f)
    assert values is not None and values[0] == np.float32(2.0) and values[1] is arr
    n = 7
    assert read(f)[2] == 7


def test_reader_reads_an_array_mutated_or_rebound_to_the_same_type(restore):
    global arr
    f = closure_and_globals()
    read = reader_for(f)
    arr[0] = 9.0
    assert read(f)[1][0] == 9.0
    arr = np.full(4, 5.0)
    assert read(f)[1] is arr


@pytest.mark.parametrize(
    "change",
    [
        "array_dtype",
        "array_rank_in_place",
        "array_to_list",
        "int_to_float",
        "int_to_numpy_int",
        "int_beyond_int64",
        "module_rebound",
        "helper_rebound",
        "global_deleted",
        "helper_deleted",
    ],
)
def test_reader_refuses_values_of_other_types_and_changed_resolutions(change, restore):
    global arr, n, math, helper
    f = closure_and_globals()
    read = reader_for(f)
    assert read(f) is not None
    if change == "array_dtype":
        arr = np.arange(4, dtype=np.float32)
    elif change == "array_rank_in_place":
        arr.shape = (2, 2)
    elif change == "array_to_list":
        arr = [0.0, 1.0, 2.0, 3.0]
    elif change == "int_to_float":
        n = 3.0
    elif change == "int_to_numpy_int":
        n = np.int64(3)
    elif change == "int_beyond_int64":
        n = 2**63
    elif change == "module_rebound":
        math = types.ModuleType("math")
    elif change == "helper_rebound":
        helper = lambda x: x  # noqa: E731
    elif change == "global_deleted":
        del globals()["n"]
    else:
        del globals()["helper"]
    assert read(f) is None


def test_reader_refuses_a_subclass_instance_where_the_exact_type_was_compiled():
    class Sub(np.ndarray):
        pass

    f = closure_and_globals()
    read = make_reader([GLOBAL_ARR], [arr])
    assert read is not None and read(f) is not None
    g = types.FunctionType(
        f.__code__, {**f.__globals__, "arr": arr.view(Sub)}, None, None, f.__closure__
    )
    assert read(g) is None


def test_reader_compares_pinned_contents_on_every_call(restore):
    f = closure_and_globals()
    pinned = arr.copy()
    read = make_reader([GLOBAL_ARR], [arr], pinned=[(0, lambda a: np.array_equal(a, pinned))])
    assert read is not None and read(f) is not None
    arr[1] = -1.0
    assert read(f) is None
    arr[1] = pinned[1]
    assert read(f) is not None


def emptied_cell():
    k = 1.0

    def f(i):
        return i + k  # noqa: F821  (k is deleted below: the cell is empty)

    del k
    return f


def test_reader_of_an_emptied_cell_is_none_and_the_fetcher_raises():
    read = make_reader([CLOSURE_K], [1.0])
    assert read is not None and read(emptied_cell()) is None
    with pytest.raises(ValueError, match="empty"):
        make_fetcher([CLOSURE_K])(emptied_cell())


def test_fetcher_of_a_deleted_global_raises_the_lookup_error(restore):
    f = closure_and_globals()
    fetch = make_fetcher(PATHS)
    assert fetch(f)[2] == 3
    del globals()["n"]
    with pytest.raises(KeyError, match="'n'"):
        fetch(f)


def test_reader_of_attribute_and_constant_paths():
    root = types.SimpleNamespace(a=types.SimpleNamespace(b=np.int32(5)))
    paths = [CapturePath((("attr", "a"), ("attr", "b"))), CapturePath((("const", 2.5),))]
    read = make_reader(paths, [np.int32(1), 1.0])
    assert read is not None and read(root) == [np.int32(5), 2.5]
    assert make_fetcher(paths)(root) == [np.int32(5), 2.5]
    root.a.b = np.int64(5)
    assert read(root) is None


def test_no_reader_where_the_type_key_is_not_a_function_of_the_type():
    # a datetime64's unit is per value; a plain object may be an array per instance
    assert type_tests([np.datetime64("2020-01-01")]) is None
    assert make_reader([CLOSURE_K], [object()]) is None
    tests = type_tests([1, np.float32(1.0), np.zeros((2, 3), np.int8)])
    assert tests is not None
    assert tests.types == (int, np.float32, np.ndarray)
    assert tests.arrays == ((2, np.dtype(np.int8), 2),)


def test_resolution_test_misses_a_rebound_or_deleted_helper(restore):
    global helper
    f = closure_and_globals()
    assert make_resolution_test([]) is None
    valid = make_resolution_test([(HELPER, helper), (MATH, math)])
    assert valid is not None and valid(f)
    helper = lambda x: x  # noqa: E731
    assert not valid(f)
    del globals()["helper"]
    assert not valid(f)
