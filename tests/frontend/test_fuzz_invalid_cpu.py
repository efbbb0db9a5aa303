"""A hunt for invalid programs and API misuse of the kinds users port from numba.cuda, CuPy
and NumPy code: each rejected program is one located ``OffloadError`` (file, line, column,
the caret under the offending source; never "a bug in offload", never an internal
exception), each API mistake a ``TypeError``/``ValueError`` (or an ``OffloadError``) naming
it, and the accepted corner cases give CPython's values. ``compute_s`` and ``compute_p``."""
# ruff: noqa: E501, E702, F841, PLC2401, RET504
# mypy: ignore-errors

from __future__ import annotations

import functools
import linecache
import math
import operator
import os.path
import types
import unicodedata
import warnings

import numba
import numpy as np
import pytest

import offload as ol
from offload.diagnostics import (
    AllocationNotAllowed,
    OffloadError,
    SourceUnavailable,
    TypeMismatch,
    UnresolvedCall,
    UnsupportedSyntax,
    WriteNotAllowed,
)

pytestmark = pytest.mark.cpu

FILE = __file__
TARGETS = {"s": ol.compute_s, "p": ol.compute_p}

A = np.arange(8, dtype=np.float64)
A2 = np.arange(12, dtype=np.float64).reshape(3, 4)
I8 = np.arange(8, dtype=np.int8)
U8 = np.arange(8, dtype=np.uint8)
NAME = "abc"
LST = [1.0, 2.0, 3.0]
DCT = {0: 1.0}
NONE = None
BIG_ENDIAN = np.arange(4, dtype=">f8")
COMPLEX_ARR = np.arange(4, dtype=np.complex128)
OBJECT_ARR = np.arange(4).astype(object)
STRUCT_ARR = np.zeros(4, dtype=[("x", "f8")])
HALF_ARR = np.zeros(4, dtype=np.float16)
DATES = np.zeros(4, dtype="M8[s]")
ZERO_D = np.array(3.0)
CPLX = 1j
HALF = np.float16(1.0)
HUGE = 2**70
MIXED_TUPLE = (1.0, "a")
RANGE = range(3)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", PendingDeprecationWarning)
    MATRIX = np.matrix([[1.0], [2.0]])
MASKED = np.ma.array([1.0, 2.0])


class _Config:
    scale = 1.0

    def offset(self, x):
        return x + 1.0

    @staticmethod
    def st(i):
        return i * 2


CFG = _Config()


@numba.njit
def _jitted(x):
    return x * 2


@functools.lru_cache
def _cached(x):
    return x * 2


def _h_kwonly(x, *, y=1):
    return x + y


def _h_varargs(*xs):
    return xs[0]


def _h2(x, y=1):
    return x + y


def _h_mut_default(x, t=[1.0]):
    return x + t[0]


def _h_none_default(x, t=None):
    return x


def _h_gen(x):
    yield x


async def _h_async(x):
    return x


# -- source errors: (function, class, caret text, words of the message) --------------------


def fstring(i):
    s = f"{i}"
    return len(s)


def str_method(i):
    return "abc".upper()


def len_of_captured_str(i):
    return len(NAME)


def index_captured_list(i):
    return LST[i % 3]


def index_captured_dict(i):
    return DCT[0]


def return_captured_none(i):
    return NONE


def method_of_captured_object(i):
    return CFG.offset(i)


def keyword_only_parameter(i, *, k=1):
    return i + k


def variadic_element_function(*idx):
    return idx[0]


def lambda_inside(i):
    g = lambda x: x + 1
    return g(i)


def generator_element_function(i):
    yield i


def return_captured_array(i):
    return A


def return_local_array(i):
    t = np.zeros(3)
    return t


def return_list(i):
    return [i, i]


def shadowed_min(i):
    min = 3
    return min(i, 2)


def shadowed_range(i):
    range = 4
    s = 0
    for k in range(range):
        s += k
    return s


def math_factorial(i):
    return math.factorial(i)


def math_log_with_base(i):
    return math.log(A[i] + 1.0, 2.0)


def numpy_cbrt(i):
    return np.cbrt(A[i])


def array_transpose_attribute(i):
    return A2.T[0, i]


def unknown_array_attribute(i):
    return A.foo


def real_of_a_float(i):
    return A[i].real


def sum_with_axis(i):
    return A2.sum(axis=0)[i]


def shape_index_out_of_range(i):
    return A.shape[3]


def tuple_index_out_of_range(i):
    t = (1, 2)
    return t[5]


def calling_a_constant(i):
    return np.pi()


def int_with_base(i):
    return int("3", 2)


def float_of_a_string(i):
    return float("nan")


def range_of_a_float(i):
    s = 0
    for k in range(1.5):
        s += k
    return s


def for_over_an_int(i):
    s = 0
    for k in i:
        s += k
    return s


def three_argument_pow(i):
    return pow(i, 2, 5)


def min_without_arguments(i):
    return min()


def max_of_one_int(i):
    return max(i)


def unpack_an_int(i):
    a, b = i
    return a + b


def index_an_int(i):
    return i[0]


def len_of_an_int(i):
    return len(i)


def compare_tuples(i):
    return (1, i) < (3, 4)


def negate_a_tuple(i):
    t = -(1, 2)
    return t[0]


def write_through_an_alias(i):
    x = A
    x[i] = 1.0
    return 0.0


def augmented_write_to_captured(i):
    A[i] += 1.0
    return 0.0


def array_fill_method(i):
    A.fill(0.0)
    return 0.0


def numpy_sort(i):
    return np.sort(A)[i]


def bitwise_and_of_a_float(i):
    return 1.5 & i


def invert_a_float(i):
    return ~A[i]


def shift_beyond_64_bits(i):
    return 1 << 70


def power_beyond_64_bits(i):
    return i + 2**64


def constant_below_int64(i):
    return i + (-(2**63) - 1)


def int8_of_300(i):
    return np.int8(300)


def uint8_of_minus_one(i):
    return np.uint8(-1)


def complex_literal(i):
    return 1j


def bytes_literal(i):
    return b"x"


def ellipsis_index(i):
    return A[...]


def star_argument(i):
    t = (i, 1)
    return max(*t)


def attribute_of_a_local(i):
    x = 1.0
    x.y = 2
    return x


def index_with_a_tuple_variable(i):
    t = (i, 0)
    return A2[t]


def index_with_a_bool(i):
    return A[True]


def index_with_a_float_constant(i):
    return A[1.0]


def too_many_indices(i):
    return A[i, 0]


def where_with_one_argument(i):
    return np.where(A > 1)[0]


def is_none(i):
    x = i
    return x is None


def augmented_tuple(i):
    t = (1, 2)
    t += (3,)
    return t[1]


def starred_unpack(i):
    a, *b = (1, 2, 3)
    return a


def dict_method(i):
    return {}.get(i, 0)


def getattr_builtin(i):
    return getattr(A, "size")


def isinstance_builtin(i):
    return isinstance(i, int)


def type_builtin(i):
    return type(i)


def hash_builtin(i):
    return hash(i)


def ord_builtin(i):
    return ord("a") + i


def helper_is_numba_njit(i):
    return _jitted(i)


def helper_with_lru_cache(i):
    return _cached(i)


def static_method_through_class(i):
    return _Config.st(i)


def helper_with_keyword_only(i):
    return _h_kwonly(i, y=2)


def helper_with_varargs(i):
    return _h_varargs(i)


def helper_unknown_keyword(i):
    return _h2(i, z=1)


def helper_repeated_argument(i):
    return _h2(i, x=1)


def helper_too_many_arguments(i):
    return _h2(i, 1, 2)


def helper_list_default(i):
    return _h_mut_default(i)


def helper_none_default(i):
    return _h_none_default(i)


def helper_generator(i):
    return _h_gen(i)


def helper_async(i):
    return _h_async(i)


def os_path_call(i):
    return os.path.join("a")


def numpy_random_generator(i):
    return np.random.default_rng().random()


# fmt: off
def error_on_a_continuation_line(i):
    return (A[i] +
            print(i))
# fmt: on


def string_after_non_ascii(i):
    émoji_ñ = "日本"; return len(émoji_ñ)  # fmt: skip


def tolist_method(i):
    return A.tolist()[i]


def item_with_an_index(i):
    return A.item(i)


def flat_attribute(i):
    return A.flat[i]


def reshape_method(i):
    return A.reshape(2, 4)[0, i]


def write_through_a_view(i):
    r = A2[0]
    r[i] = 1.0
    return 0.0


def slice_a_local_array(i):
    t = np.zeros(4)
    return t[1:3][0]


def three_dimensional_local(i):
    t = np.zeros((2, 2, 2))
    return t[0, 0, 0]


def local_array_too_big(i):
    t = np.zeros(2000)
    return t[i]


def local_array_negative_size(i):
    t = np.zeros(-3)
    return 0.0


def local_array_float_size(i):
    t = np.zeros(3.5)
    return 0.0


def local_array_of_strings(i):
    t = np.zeros(3, dtype="U3")
    return 0.0


def local_array_of_complex(i):
    t = np.zeros(3, dtype=np.complex128)
    return 0.0


def local_array_of_size_zero(i):
    t = np.zeros(0)
    return len(t) + i


def local_arrays_of_two_lengths(i):
    t = np.zeros(3) + np.zeros(4)
    return t[0]


def matmul_of_two_lengths(i):
    m = np.zeros((2, 3))
    v = np.zeros(2)
    return (m @ v)[0]


def list_concatenation(i):
    t = [1.0, 2.0] + [3.0]
    return t[0]


def list_append(i):
    t = [1.0, 2.0]
    t.append(3.0)
    return t[0]


def local_array_float_index(i):
    t = np.zeros(3)
    return t[1.0]


def int8_local_gets_300(i):
    t = np.zeros(3, dtype=np.int8)
    t[0] = 300
    return t[0]


def empty_list(i):
    t = []
    return 0


def full_of_a_string(i):
    t = np.full(3, "a")
    return 0


def ragged_array(i):
    t = np.array([[1.0, 2.0], [3.0]])
    return t[0, 0]


def empty_np_array(i):
    t = np.array([])
    return 0.0


def loop_variable_after_the_loop(i):
    for k in range(i):
        pass
    return k


def builtin_sum_of_a_matrix(i):
    return sum(A2)[i % 4]


def slice_step_zero(i):
    return A[::0][0]


def int64_of_2_to_63(i):
    return np.int64(2**63) + i


def negated_int64_minimum(i):
    return i + -(-(2**63))


def range_beyond_int64(i):
    s = 0
    for k in range(10**20, 10**20 + 2):
        s += 1
    return s + i


def len_of_range(i):
    return len(range(i))


def int64_minimum_floordiv_minus_one(i):
    return (-(2**63)) // -1 + i


def power_too_big(i):
    return 3**100


def tuple_index_2_to_70(i):
    t = (1, 2, 3)
    return t[2**70]


def round_int_to_negative_digits(i):
    return round(1234, -2) + i


def uint64_max_beside_int64(i):
    return 0xFFFFFFFFFFFFFFFF + i


def slice_a_tuple(i):
    t = (1, 2, 3)
    return t[1:][0] + i


def tuple_index_method(i):
    t = (1, 2, 3)
    return t.index(2)


def starred_tuple_display(i):
    t = (1, 2)
    u = (*t, 3)
    return u[2]


def assign_into_a_tuple(i):
    t = (1, 2)
    t[0] = 5
    return t[0]


def range_in_a_variable(i):
    r = range(3)
    s = 0
    for k in r:
        s += k
    return s


def zip_of_nothing(i):
    for x in zip():
        pass
    return 0


def sorted_builtin(i):
    return sorted((3, 1, 2))[0]


def any_builtin(i):
    return any((i > 1, i > 2))


def builtin_map(i):
    return sum(map(abs, (1, -2)))


def next_iter(i):
    return next(iter((1, 2)))


def for_over_an_element(i):
    s = 0.0
    for v in A2[0, 0]:
        s += v
    return s


def int_bit_length(i):
    return i.bit_length()


def float_is_integer(i):
    return A[i].is_integer()


def float_fromhex(i):
    return float.fromhex("0x1p-3")


def eval_builtin(i):
    return eval("1")


def locals_builtin(i):
    return len(locals())


def dunder_import(i):
    return __import__("math").pi


def branches_of_two_tuple_sizes(i):
    return (1, 2) if i else (1, 2, 3)


def real_of_an_int(i):
    return i.real


def ndim_called(i):
    return A.ndim()


def return_a_dtype(i):
    return A.dtype


def finfo_of_an_int_type(i):
    return np.finfo(np.int32).eps


def iinfo_of_a_float_type(i):
    return np.iinfo(np.float64).max


def unknown_finfo_attribute(i):
    return np.finfo(np.float32).nope


def float64_of_a_tuple(i):
    return np.float64((1, 2))


def abs_of_a_tuple(i):
    return abs((1, 2))


def astype_to_complex(i):
    return A[i].astype(np.complex64)


def isclose_unknown_keyword(i):
    return np.isclose(A[i], 1.0, foo=1)


def isclose_equal_nan_not_constant(i):
    return np.isclose(A[i], 1.0, equal_nan=i > 2)


def min_with_key(i):
    return min(1, 2, key=abs)


def max_with_default(i):
    return max(A[0:0], default=0.0)


def round_to_run_time_digits(i):
    return np.round(A[i], i)


def sum_with_a_tuple_start(i):
    return sum(A, (1,))


def print_with_file(i):
    print(i, file=None)
    return i


def captured_big_endian(i):
    return BIG_ENDIAN[i]


def captured_complex_array(i):
    return COMPLEX_ARR[i]


def captured_object_array(i):
    return OBJECT_ARR[i]


def captured_structured_array(i):
    return STRUCT_ARR[i]


def captured_float16_array(i):
    return HALF_ARR[i]


def captured_datetime_array(i):
    return DATES[i]


def zero_d_array_as_a_number(i):
    return ZERO_D + i


def captured_complex(i):
    return CPLX + i


def captured_float16(i):
    return HALF + i


def captured_int_beyond_64_bits(i):
    return HUGE + i


def captured_tuple_with_a_string(i):
    return MIXED_TUPLE[0] + i


def captured_range(i):
    return RANGE[0] + i


def captured_matrix(i):
    return MATRIX[i, 0]


def captured_masked_array(i):
    return MASKED[i]


# fmt: off
SOURCE_ERRORS = [
    (fstring, AllocationNotAllowed, 'f"{i}"', 'f-strings allocate memory and are not allowed in'),
    (str_method, AllocationNotAllowed, '"abc"', 'string literals allocate memory and are not'),
    (len_of_captured_str, TypeMismatch, 'len(NAME)', "len() of a Python object 'NAME'"),
    (index_captured_list, TypeMismatch, 'LST', "a Python object 'LST' cannot be indexed"),
    (index_captured_dict, TypeMismatch, 'DCT', "a Python object 'DCT' cannot be indexed"),
    (return_captured_none, TypeMismatch, 'NONE', "cannot return a Python object 'NONE'"),
    (method_of_captured_object, UnresolvedCall, 'CFG.offset(i)', "'CFG.offset' calls a method of a captured"),
    (keyword_only_parameter, UnsupportedSyntax, 'k', "keyword-only parameter 'k' is not supported in"),
    (variadic_element_function, UnsupportedSyntax, 'idx', "variadic parameter 'idx' is not supported in"),
    (lambda_inside, AllocationNotAllowed, 'lambda x: x + 1', 'lambdas inside element functions create closures'),
    (generator_element_function, UnsupportedSyntax, 'yield i', 'yield is not supported in element functions'),
    (return_captured_array, TypeMismatch, 'A', 'cannot return a captured array of float64 with 1'),
    (return_local_array, TypeMismatch, 't', 'cannot return a local array of float64 with'),
    (return_list, TypeMismatch, '[i, i]', 'cannot return a list of int64 with shape (2,)'),
    (shadowed_min, UnresolvedCall, 'min(i, 2)', "'min' is a local variable; calls through"),
    (shadowed_range, UnresolvedCall, 'range(range)', "'range' is a local variable; calls through"),
    (math_factorial, UnresolvedCall, 'math.factorial(i)', "'math.factorial' is not an allowed function in"),
    (math_log_with_base, UnsupportedSyntax, 'math.log(A[i] + 1.0, 2.0)', "'math.log' takes 1 argument(s) in element"),
    (numpy_cbrt, UnresolvedCall, 'np.cbrt(A[i])', "'np.cbrt' is not an allowed function in element"),
    (array_transpose_attribute, UnsupportedSyntax, 'A2.T', "the array attribute '.T' is not supported in"),
    (unknown_array_attribute, UnsupportedSyntax, 'A.foo', "the array attribute '.foo' is not supported in"),
    (real_of_a_float, TypeMismatch, 'A[i].real', "a float64 has no attribute 'real'"),
    (sum_with_axis, UnsupportedSyntax, '0', "keyword arguments to '.sum()' is not supported"),
    (shape_index_out_of_range, TypeMismatch, 'A.shape[3]', 'tuple index 3 out of range (size 1)'),
    (tuple_index_out_of_range, TypeMismatch, 't[5]', 'tuple index 5 out of range (size 2)'),
    (calling_a_constant, UnresolvedCall, 'np.pi()', "'np.pi' is a captured float value, not a"),
    (int_with_base, UnsupportedSyntax, 'int("3", 2)', "'int' takes 1 argument(s) in element functions,"),
    (float_of_a_string, AllocationNotAllowed, '"nan"', 'string literals allocate memory and are not'),
    (range_of_a_float, TypeMismatch, '1.5', 'range() bounds must be integers'),
    (for_over_an_int, TypeMismatch, 'i', 'a for loop cannot iterate over a Python int'),
    (three_argument_pow, UnsupportedSyntax, 'pow(i, 2, 5)', "'pow' takes 2 argument(s) in element functions,"),
    (min_without_arguments, UnsupportedSyntax, 'min()', "'min' takes 1 to 8 argument(s) in element"),
    (max_of_one_int, TypeMismatch, 'max(i)', 'max() needs at least two values here'),
    (unpack_an_int, TypeMismatch, 'a, b', 'cannot unpack a Python int into names'),
    (index_an_int, TypeMismatch, 'i', 'a Python int cannot be indexed'),
    (len_of_an_int, TypeMismatch, 'len(i)', 'len() of a Python int'),
    (compare_tuples, TypeMismatch, '(1, i)', 'this operand must be a number or bool, not a'),
    (negate_a_tuple, TypeMismatch, '(1, 2)', 'this operand must be a number or bool, not a'),
    (write_through_an_alias, WriteNotAllowed, 'x[i]', 'writing into a captured array of float64 with 1'),
    (augmented_write_to_captured, WriteNotAllowed, 'A[i]', "writing to 'A' is not allowed in element"),
    (array_fill_method, UnresolvedCall, 'A.fill(0.0)', "'A.fill' calls a method of a captured ndarray"),
    (numpy_sort, UnresolvedCall, 'np.sort(A)', "'np.sort' is not an allowed function in element"),
    (bitwise_and_of_a_float, TypeMismatch, '1.5 & i', "unsupported operand types for &: 'float' and"),
    (invert_a_float, TypeMismatch, '~A[i]', "bad operand type for unary invert: 'float64'"),
    (shift_beyond_64_bits, TypeMismatch, '1 << 70', 'the constant 1 << 70 = 1180591620717411303424'),
    (power_beyond_64_bits, TypeMismatch, '2**64', 'the constant 2 ** 64 = 18446744073709551616 does'),
    (constant_below_int64, TypeMismatch, '-(2**63) - 1', 'the constant -9223372036854775808 - 1 ='),
    (int8_of_300, TypeMismatch, 'np.int8(300)', 'the Python int 300 does not fit int8'),
    (uint8_of_minus_one, TypeMismatch, 'np.uint8(-1)', 'the Python int -1 does not fit uint8'),
    (complex_literal, UnsupportedSyntax, '1j', 'complex numbers are not supported in element'),
    (bytes_literal, AllocationNotAllowed, 'b"x"', 'bytes literals allocate memory and are not'),
    (ellipsis_index, UnsupportedSyntax, '...', 'Ellipsis is not supported in element functions'),
    (star_argument, UnsupportedSyntax, '*t', 'star-arguments are not supported in element'),
    (attribute_of_a_local, WriteNotAllowed, 'x.y', "assigning to attribute 'y' is not allowed in"),
    (index_with_a_tuple_variable, TypeMismatch, 't', 'an array index must be a number or bool, not a'),
    (index_with_a_bool, TypeMismatch, 'True', 'array indices must be integers, not Python bool'),
    (index_with_a_float_constant, TypeMismatch, '1.0', 'array indices must be integers, not Python float'),
    (too_many_indices, TypeMismatch, 'A[i, 0]', "too many indices: 'A' has 1 dimension but 2"),
    (where_with_one_argument, UnsupportedSyntax, 'np.where(A > 1)', "'np.where' takes 3 argument(s) in element"),
    (is_none, UnsupportedSyntax, 'x is None', "'is' comparisons are not supported in element"),
    (augmented_tuple, TypeMismatch, 't', 'this operand must be a number or bool, not a'),
    (starred_unpack, UnsupportedSyntax, '*b', 'starred assignment is not supported in element'),
    (dict_method, AllocationNotAllowed, '{}', 'dict literals allocate memory and are not'),
    (getattr_builtin, UnresolvedCall, 'getattr(A, "size")', "'getattr' is not an allowed function in element"),
    (isinstance_builtin, UnresolvedCall, 'isinstance(i, int)', "'isinstance' is not an allowed function in"),
    (type_builtin, AllocationNotAllowed, 'type(i)', "constructing a 'type' object allocates memory"),
    (hash_builtin, UnresolvedCall, 'hash(i)', "'hash' is not an allowed function in element"),
    (ord_builtin, UnresolvedCall, 'ord("a")', "'ord' is not an allowed function in element"),
    (helper_is_numba_njit, UnresolvedCall, '_jitted(i)', "'_jitted' is not an allowed function in element"),
    (helper_with_lru_cache, UnresolvedCall, '_cached(i)', "'_cached' is not an allowed function in element"),
    (static_method_through_class, UnresolvedCall, '_Config.st(i)', "'_Config.st' calls a method of a captured type"),
    (helper_with_keyword_only, UnsupportedSyntax, 'y', "keyword-only parameter 'y' is not supported in"),
    (helper_with_varargs, UnsupportedSyntax, 'xs', "variadic parameter 'xs' is not supported in"),
    (helper_unknown_keyword, TypeMismatch, '_h2(i, z=1)', "'_h2' got an unexpected or repeated argument 'z'"),
    (helper_repeated_argument, TypeMismatch, '_h2(i, x=1)', "'_h2' got an unexpected or repeated argument 'x'"),
    (helper_too_many_arguments, TypeMismatch, '_h2(i, 1, 2)', "'_h2' takes 2 arguments but 3 were given"),
    (helper_list_default, TypeMismatch, '_h_mut_default(i)', "'_h_mut_default' has a default for 't' that is"),
    (helper_none_default, TypeMismatch, '_h_none_default(i)', "'_h_none_default' has a default for 't' that is"),
    (helper_generator, UnsupportedSyntax, 'yield x', 'yield is not supported in element functions'),
    (helper_async, SourceUnavailable, '_h_async(i)', "cannot inline helper '_h_async': 'async def"),
    (os_path_call, UnresolvedCall, 'os.path.join("a")', "'os.path.join' is not an allowed function in"),
    (numpy_random_generator, UnresolvedCall, 'np.random.default_rng()', "'np.random.default_rng' is not an allowed"),
    (error_on_a_continuation_line, UnresolvedCall, 'print(i)', 'print() cannot be called in element functions'),
    (string_after_non_ascii, AllocationNotAllowed, '"日本"', 'string literals allocate memory and are not'),
    (tolist_method, UnresolvedCall, 'A.tolist()', "'A.tolist' calls a method of a captured ndarray"),
    (item_with_an_index, UnsupportedSyntax, 'A.item', "the array attribute '.item' is not supported in"),
    (flat_attribute, UnsupportedSyntax, 'A.flat', "the array attribute '.flat' is not supported in"),
    (reshape_method, UnresolvedCall, 'A.reshape(2, 4)', "'A.reshape' calls a method of a captured ndarray"),
    (write_through_a_view, WriteNotAllowed, 'r[i]', "writing through a view of captured 'A2' is not"),
    (slice_a_local_array, UnsupportedSyntax, '1:3', 'slicing a local array is not supported in'),
    (three_dimensional_local, UnsupportedSyntax, '(2, 2, 2)', 'a local array of 3 dimensions is not supported'),
    (local_array_too_big, AllocationNotAllowed, '2000', 'a local array of shape (2000,) is not allowed:'),
    (local_array_negative_size, AllocationNotAllowed, '-3', 'a local array of shape (-3,) is not allowed:'),
    (local_array_float_size, AllocationNotAllowed, '3.5', "'np.zeros' with a size that is not a"),
    (local_array_of_strings, TypeMismatch, '"U3"', "'np.zeros' with dtype 'U3'"),
    (local_array_of_complex, TypeMismatch, 'np.complex128', "'np.zeros' with dtype <class 'numpy.complex128'>"),
    (local_array_of_size_zero, AllocationNotAllowed, '0', 'a local array of shape (0,) is not allowed:'),
    (local_arrays_of_two_lengths, TypeMismatch, 'np.zeros(3) + np.zeros(4)', 'operands of lengths 3 and 4 cannot be combined'),
    (matmul_of_two_lengths, TypeMismatch, 'm @ v', 'shapes not aligned: 3 != 2'),
    (list_concatenation, TypeMismatch, '[1.0, 2.0]', 'this operand must be a number or bool, not a'),
    (list_append, UnresolvedCall, 't.append(3.0)', 'method calls are not supported in element'),
    (local_array_float_index, TypeMismatch, '1.0', 'array indices must be integers, not Python float'),
    (int8_local_gets_300, TypeMismatch, 't[0]', 'the Python int 300 does not fit int8'),
    (empty_list, AllocationNotAllowed, '[]', 'an empty list cannot be a local array'),
    (full_of_a_string, UnsupportedSyntax, '"a"', "the constant 'a' is not supported in element"),
    (ragged_array, TypeMismatch, '[[1.0, 2.0], [3.0]]', "'np.array' of rows of different lengths"),
    (empty_np_array, UnsupportedSyntax, '[]', "'np.array' of anything but a list or tuple"),
    (loop_variable_after_the_loop, TypeMismatch, 'k', "'k' cannot be used here: it is only assigned"),
    (builtin_sum_of_a_matrix, TypeMismatch, 'sum(A2)', 'sum() of a view of more than one dimension adds'),
    (slice_step_zero, TypeMismatch, '0', 'slice step cannot be zero'),
    (int64_of_2_to_63, TypeMismatch, 'np.int64(2**63)', 'the Python int 9223372036854775808 does not fit'),
    (negated_int64_minimum, TypeMismatch, 'i + -(-(2**63))', 'the Python int 9223372036854775808 does not fit'),
    (range_beyond_int64, TypeMismatch, '10**20', 'the constant 10 ** 20 = 100000000000000000000'),
    (len_of_range, UnsupportedSyntax, 'range(i)', 'range() outside a for loop header is not'),
    (int64_minimum_floordiv_minus_one, TypeMismatch, '(-(2**63)) // -1 + i', 'the Python int 9223372036854775808 does not fit'),
    (power_too_big, TypeMismatch, '3**100', 'the constant 3 ** 100 ='),
    (tuple_index_2_to_70, TypeMismatch, '2**70', 'the constant 2 ** 70 = 1180591620717411303424'),
    (round_int_to_negative_digits, UnsupportedSyntax, 'round(1234, -2)', 'round(x, n) of a Python number (CPython rounds'),
    (uint64_max_beside_int64, TypeMismatch, '0xFFFFFFFFFFFFFFFF + i', 'the Python int 18446744073709551615 does not fit'),
    (slice_a_tuple, UnsupportedSyntax, '1:', 'slicing a tuple is not supported in element'),
    (tuple_index_method, UnresolvedCall, 't.index(2)', 'method calls are not supported in element'),
    (starred_tuple_display, UnsupportedSyntax, '*t', 'star-arguments are not supported in element'),
    (assign_into_a_tuple, WriteNotAllowed, 't[0]', "writing to 't' is not allowed in element"),
    (range_in_a_variable, UnsupportedSyntax, 'range(3)', 'range() outside a for loop header is not'),
    (zip_of_nothing, UnsupportedSyntax, 'zip()', "'zip' takes 1 to 8 argument(s) in element"),
    (sorted_builtin, UnresolvedCall, 'sorted((3, 1, 2))', "'sorted' is not an allowed function in element"),
    (any_builtin, UnresolvedCall, 'any((i > 1, i > 2))', "'any' is not an allowed function in element"),
    (builtin_map, AllocationNotAllowed, 'map(abs, (1, -2))', "constructing a 'map' object allocates memory and"),
    (next_iter, UnresolvedCall, 'next(iter((1, 2)))', "'next' is not an allowed function in element"),
    (for_over_an_element, TypeMismatch, 'A2[0, 0]', 'a for loop cannot iterate over a float64'),
    (int_bit_length, UnresolvedCall, 'i.bit_length()', 'method calls are not supported in element'),
    (float_is_integer, UnresolvedCall, 'A[i].is_integer()', 'method calls are not supported in element'),
    (float_fromhex, UnresolvedCall, 'float.fromhex("0x1p-3")', "'float.fromhex' calls a method of a captured"),
    (eval_builtin, UnresolvedCall, 'eval("1")', "'eval' is not an allowed function in element"),
    (locals_builtin, UnresolvedCall, 'locals()', "'locals' is not an allowed function in element"),
    (dunder_import, UnresolvedCall, '__import__("math")', "'__import__' is not an allowed function in"),
    (branches_of_two_tuple_sizes, TypeMismatch, '(1, 2) if i else (1, 2, 3)', 'the alternatives do not agree: it holds'),
    (real_of_an_int, TypeMismatch, 'i.real', "a Python int has no attribute 'real'"),
    (ndim_called, UnresolvedCall, 'A.ndim()', "'A.ndim' calls a method of a captured ndarray"),
    (return_a_dtype, TypeMismatch, 'A.dtype', "cannot return a Python object 'A.dtype'"),
    (finfo_of_an_int_type, TypeMismatch, 'np.finfo(np.int32)', "np.finfo(int32): data type <class 'numpy.int32'>"),
    (iinfo_of_a_float_type, TypeMismatch, 'np.iinfo(np.float64)', 'np.iinfo(float64): Invalid integer data type'),
    (unknown_finfo_attribute, TypeMismatch, 'np.finfo(np.float32).nope', "'np.finfo(float32)' has no attribute 'nope'"),
    (float64_of_a_tuple, TypeMismatch, '(1, 2)', 'this operand must be a number or bool, not a'),
    (abs_of_a_tuple, TypeMismatch, '(1, 2)', 'this operand must be a number or bool, not a'),
    (astype_to_complex, TypeMismatch, 'np.complex64', "'.astype()' takes a NumPy scalar type or dtype"),
    (isclose_unknown_keyword, UnsupportedSyntax, 'foo=1', "keyword arguments to 'np.isclose' are not"),
    (isclose_equal_nan_not_constant, TypeMismatch, 'np.isclose(A[i], 1.0, equal_nan=i > 2)', "np.isclose's equal_nan must be a constant here"),
    (min_with_key, UnsupportedSyntax, 'key=abs', "keyword arguments to 'min' are not supported"),
    (max_with_default, UnsupportedSyntax, 'default=0.0', "keyword arguments to 'max' are not supported"),
    (round_to_run_time_digits, UnsupportedSyntax, 'np.round(A[i], i)', 'rounding to a number of decimals that is not a'),
    (sum_with_a_tuple_start, TypeMismatch, '(1,)', "sum()'s start must be a number or bool, not a"),
    (print_with_file, UnresolvedCall, 'print(i, file=None)', 'print() cannot be called in element functions'),
    (captured_big_endian, TypeMismatch, 'BIG_ENDIAN', "captured 'BIG_ENDIAN' has an unsupported element"),
    (captured_complex_array, TypeMismatch, 'COMPLEX_ARR', "captured 'COMPLEX_ARR' has an unsupported"),
    (captured_object_array, TypeMismatch, 'OBJECT_ARR', "captured 'OBJECT_ARR' has an unsupported element"),
    (captured_structured_array, TypeMismatch, 'STRUCT_ARR', "captured 'STRUCT_ARR' has an unsupported element"),
    (captured_float16_array, TypeMismatch, 'HALF_ARR', "captured 'HALF_ARR' has an unsupported element"),
    (captured_datetime_array, TypeMismatch, 'DATES', "captured 'DATES' has an unsupported element type"),
    (zero_d_array_as_a_number, TypeMismatch, 'ZERO_D', 'this operand must be a number or bool, not a'),
    (captured_complex, TypeMismatch, 'CPLX', 'this operand must be a number or bool, not a'),
    (captured_float16, TypeMismatch, 'HALF', "captured 'HALF' has an unsupported element type"),
    (captured_int_beyond_64_bits, TypeMismatch, 'HUGE', "captured 'HUGE' = 1180591620717411303424 does"),
    (captured_tuple_with_a_string, TypeMismatch, 'MIXED_TUPLE', "a Python object 'MIXED_TUPLE' cannot be indexed"),
    (captured_range, TypeMismatch, 'RANGE', "a Python object 'RANGE' cannot be indexed"),
    (captured_matrix, TypeMismatch, 'MATRIX', "captured 'MATRIX' is a numpy.matrix, an ndarray"),
    (captured_masked_array, TypeMismatch, 'MASKED', "captured 'MASKED' is a numpy.ma.MaskedArray, an"),
]
# fmt: on

_PACKAGE = os.path.dirname(ol.__file__) + os.sep


def _lines_of(fn):
    """The 1-based lines of ``fn``'s source."""
    code = fn.__code__
    last = max((line for _, _, line in code.co_lines() if line is not None), default=0)
    return range(code.co_firstlineno, last + 1)


def _covered(span):
    end = span.end_col if span.end_line == span.line else len(span.text)
    return span.text[span.col : end]


def _assert_clean(text):
    """No internal failure and nothing of offload's own source in a user's error."""
    assert "bug in offload" not in text, text
    assert "internal error" not in text, text
    assert _PACKAGE not in text, text
    assert "Traceback" not in text, text


def _cols(c):
    return 2 if unicodedata.east_asian_width(c) in "WF" else 1


def _assert_located(err, cls, caret, words, fn=None):
    """``err`` is exactly ``cls``, its first diagnostic says ``words`` and points at
    ``caret`` in this file (the line as on disk), rendered as ``file:line:col`` with the
    source line and a caret range under it; inside ``fn`` or, for a helper, with a note
    at a line of ``fn``."""
    assert type(err) is cls, f"{type(err).__name__}: {err}"
    text = str(err)
    _assert_clean(text)
    diag = err.diagnostics[0]
    assert words in diag.message, diag.message
    assert diag.rule == cls.rule
    span = diag.span
    assert span is not None, text
    assert span.file == FILE
    assert linecache.getline(FILE, span.line).rstrip("\n") == span.text
    covered = _covered(span)
    assert covered == caret, (covered, text)
    assert f"{FILE}:{span.line}:{span.col + 1}: error: {diag.message}" in text
    lead = "".join("\t" if c == "\t" else " " * _cols(c) for c in span.text[: span.col])
    marks = "^" * sum(_cols(c) for c in covered)  # (a wide character takes two columns)
    assert f"    {span.text}\n    {lead}{marks}\n" in text + "\n"
    if fn is not None and span.line not in _lines_of(fn):
        calls = [n.span.line for n in diag.notes if n.span is not None and n.span.file == FILE]
        assert any(line in _lines_of(fn) for line in calls), text


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize(
    ("fn", "cls", "caret", "words"), SOURCE_ERRORS, ids=[c[0].__name__ for c in SOURCE_ERRORS]
)
def test_an_invalid_element_function_is_one_located_error(fn, cls, caret, words, target):
    with pytest.raises(OffloadError) as info:
        TARGETS[target](4, fn)
    _assert_located(info.value, cls, caret, words, fn)


def test_every_case_is_a_function_of_this_file():
    names = [c[0].__name__ for c in SOURCE_ERRORS]
    assert len(names) == len(set(names))
    for fn, *_ in SOURCE_ERRORS:
        assert isinstance(fn, types.FunctionType) and fn.__code__.co_filename == FILE


def test_several_violations_in_one_function_are_reported_together():
    with pytest.raises(OffloadError) as info:
        ol.compute_s(4, _three_mistakes)
    got = [(d.rule, _covered(d.span)) for d in info.value.diagnostics]
    assert ("write", "A[i]") in got and ("unresolved-call", "print(i)") in got, got
    assert ("allocation", "{i}") in got, got
    _assert_clean(str(info.value))


def _three_mistakes(i):
    A[i] = 0.0
    print(i)
    return {i}


# -- API misuse: TypeError / ValueError (or an OffloadError) naming the mistake ------------


def f(i):
    return A[i] * 2.0


def f2(i, j):
    return A2[i, j]


def pair(i):
    return A[i], i


def add(a, b):
    return a + b


def add3(a, b, c):
    return a + b + c


def one(a):
    return a


def pred(x):
    return x > 2.0


def ix_id(i):
    return i


def blur(get):
    return get(-1) + get(0) + get(1)


# fmt: off
API_MISTAKES = {
    # shapes
    "shape_tuple_of_floats": (lambda c: c((2.0, 3), f2), TypeError, "shape must be an int or a tuple of ints"),
    "shape_string": (lambda c: c("4", f), TypeError, "shape must be an int or a tuple of ints"),
    "shape_none": (lambda c: c(None, f), TypeError, "shape must be an int or a tuple of ints"),
    "shape_numpy_array": (lambda c: c(np.array([4]), f), TypeError, "shape must be an int or a tuple of ints"),
    "shape_the_array_itself": (lambda c: c(A, f), TypeError, "shape must be an int or a tuple of ints"),
    "shape_bool": (lambda c: c(True, f), TypeError, "shape entries must be ints"),
    "shape_negative_entry": (lambda c: c((3, -1), f2), ValueError, "must be >= 0"),
    "shape_nested_tuple": (lambda c: c(((2,), 3), f2), TypeError, "shape must be an int or a tuple of ints"),
    "arguments_swapped": (lambda c: c(f, 4), TypeError, "must be callable"),
    "function_alone": (lambda c: c(f), TypeError, "the element function is missing"),
    "tuple_of_delayed_arrays": (lambda c: c((ol.map(one, A), ol.map(one, A))), TypeError, "the element function is missing"),
    "delayed_array_and_a_function": (lambda c: c(ol.map(one, A), one), TypeError, "takes no element function"),
    # element functions that are not plain Python functions
    "builtin_function": (lambda c: c(4, abs), SourceUnavailable, "plain Python function"),
    "operator_function": (lambda c: c(4, operator.neg), SourceUnavailable, "plain Python function"),
    "functools_partial": (lambda c: c(4, functools.partial(add, 1)), SourceUnavailable, "plain Python function"),
    "numba_dispatcher": (lambda c: c(4, _jitted), SourceUnavailable, "plain Python function"),
    "numpy_ufunc": (lambda c: c(4, np.sqrt), SourceUnavailable, "plain Python function"),
    "bound_method": (lambda c: c(4, CFG.offset), SourceUnavailable, "plain Python function"),
    "a_class": (lambda c: c(4, int), SourceUnavailable, "plain Python function"),
    # dtype=
    "dtype_float128": (lambda c: c(4, f, dtype="float128"), TypeError, "unsupported result dtype"),
    "dtype_object": (lambda c: c(4, f, dtype=object), TypeError, "unsupported result dtype"),
    "dtype_unicode": (lambda c: c(4, f, dtype="U3"), TypeError, "unsupported result dtype"),
    "dtype_datetime": (lambda c: c(4, f, dtype="M8[s]"), TypeError, "unsupported result dtype"),
    "dtype_float16": (lambda c: c(4, f, dtype=np.float16), TypeError, "unsupported result dtype"),
    "dtype_complex": (lambda c: c(4, f, dtype=np.complex64), TypeError, "unsupported result dtype"),
    "dtype_an_int": (lambda c: c(4, f, dtype=5), TypeError, "as a data type"),
    "dtype_two_for_one_result": (lambda c: c(4, f, dtype=(np.float32, np.float32)), ValueError, "dtype= names 2 dtype(s)"),
    # out=
    "out_float16": (lambda c: c(4, f, out=np.zeros(4, np.float16)), TypeError, "unsupported result dtype"),
    "out_of_another_rank": (lambda c: c(4, f, out=np.zeros((4, 1))), ValueError, "out= has shape (4, 1), expected (4,)"),
    "out_object": (lambda c: c(4, f, out=np.zeros(4, dtype=object)), TypeError, "unsupported result dtype"),
    "out_complex": (lambda c: c(4, f, out=np.zeros(4, dtype=complex)), TypeError, "unsupported result dtype"),
    "out_big_endian": (lambda c: c(4, f, out=np.zeros(4, dtype=">f8")), TypeError, "unsupported result dtype"),
    "out_bool_for_floats": (lambda c: c(4, f, out=np.zeros(4, dtype=bool)), TypeError, "same_kind"),
    "out_list_of_arrays": (lambda c: c(4, pair, out=[np.zeros(4), np.zeros(4)]), TypeError, "out= takes an array"),
    "out_memoryview": (lambda c: c(4, f, out=memoryview(np.zeros(4))), TypeError, "out= takes an array"),
    "fold_out_of_another_shape": (lambda c: c(ol.fold(add, 0.0, A2), out=np.zeros(4)), ValueError, "out= has shape (4,), expected (3,)"),
    "fold_out_int_for_floats": (lambda c: c(ol.fold(add, 0.0, A2), out=np.zeros(3, np.int64)), TypeError, "same_kind"),
    "fold_dtype_complex": (lambda c: c(ol.fold(add, 0.0, A2), dtype=complex), TypeError, "unsupported result dtype"),
    # folds
    "fold_z_string": (lambda c: c(ol.fold(add, "0", A2)), TypeError, "neutral element z must be a number"),
    "fold_z_none": (lambda c: c(ol.fold(add, None, A2)), TypeError, "neutral element z must be a number"),
    "fold_z_array": (lambda c: c(ol.fold(add, np.zeros(3), A2)), TypeError, "neutral element z must be a number"),
    "fold_z_complex": (lambda c: c(ol.fold(add, 1j, A2)), TypeError, "neutral element z must be a number"),
    "fold_z_beyond_int64": (lambda c: c(ol.fold(add, 2**70, np.arange(4))), ValueError, "does not fit int64"),
    "fold_z_300_for_int8": (lambda c: c(ol.fold(add, 300, I8)), ValueError, "does not fit int8"),
    "fold_of_a_0d_array": (lambda c: c(ol.fold(add, 0.0, np.array(3.0))), ValueError, "at least one axis"),
    "fold_combine_not_callable": (lambda c: c(ol.fold(3, 0.0, A)), TypeError, "must be callable"),
    # (max, operator.add and other known built-ins are accepted: tests/acc/test_operators_cpu.py)
    "fold_combine_builtin_hypot": (lambda c: c(ol.fold(math.hypot, 0.0, A2)), (OffloadError, TypeError), "plain Python function"),
    "fold_combine_operator_pow": (lambda c: c(ol.fold(operator.pow, 0.0, A2)), (OffloadError, TypeError), "plain Python function"),
    "scanr_combine_builtin_divmod": (lambda c: c(ol.scanr(divmod, 0.0, A)), (OffloadError, TypeError), "plain Python function"),
    "filter_predicate_a_class": (lambda c: c(ol.filter(bool, A)), (OffloadError, TypeError), "plain Python function"),
    "fold1_of_an_empty_axis": (lambda c: c(ol.fold1(add, np.zeros((3, 0)))), ValueError, "empty axis"),
    "fold_seg_float_lengths": (lambda c: c(ol.fold_seg(add, 0.0, A, np.array([4.0, 4.0]))), TypeError, "1-D integer array"),
    "fold_seg_negative_length": (lambda c: c(ol.fold_seg(add, 0.0, A, np.array([10, -2]))), ValueError, "non-negative"),
    "fold_seg_2d_lengths": (lambda c: c(ol.fold_seg(add, 0.0, A, np.array([[4, 4]]))), TypeError, "1-D integer array"),
    "fold_seg_lengths_do_not_sum": (lambda c: c(ol.fold_seg(add, 0.0, A, np.array([4, 3]))), ValueError, "sum to 7 but the axis has 8"),
    "fold_seg_scalar_lengths": (lambda c: c(ol.fold_seg(add, 0.0, A, 8)), TypeError, "1-D integer array"),
    "fold_seg_delayed_lengths": (lambda c: c(ol.fold_seg(add, 0.0, A, ol.map(one, np.array([4, 4])))), TypeError, "must be an array"),
    "fold_seg_bool_lengths": (lambda c: c(ol.fold_seg(add, 0.0, A, np.ones(8, bool))), TypeError, "1-D integer array"),
    "fold_seg_length_beyond_int64": (lambda c: c(ol.fold_seg(add, 0.0, A, np.array([2**64 - 1, 9], np.uint64))), ValueError, "does not fit int64"),
    # scans
    "scanl_z_string": (lambda c: c(ol.scanl(add, "a", A)), TypeError, "neutral element is a number"),
    "scanl_seg_lengths_do_not_sum": (lambda c: c(ol.scanl_seg(add, 0.0, A, np.array([3, 3]))), ValueError, "sum to 6"),
    "scanl_of_a_0d_array": (lambda c: c(ol.scanl(add, 0.0, np.array(1.0))), ValueError, "rank >= 1"),
    "scanl_total_of_a_list": (lambda c: c(ol.scanl_total(add, 0.0, [1.0])[0]), TypeError, "expected an array or a delayed array"),
    # stencils
    "stencil_boundary_unknown": (lambda c: c(ol.stencil(blur, A, "reflect")), ValueError, "boundary must be 'clamp', 'mirror', 'wrap' or constant(v)"),
    "stencil_boundary_none": (lambda c: c(ol.stencil(blur, A, None)), ValueError, "boundary must be"),
    "stencil_boundary_a_number": (lambda c: c(ol.stencil(blur, A, 0.0)), ValueError, "boundary must be"),
    "stencil_constant_string": (lambda c: c(ol.stencil(blur, A, ol.constant("x"))), TypeError, "boundary value must be a number"),
    "stencil_constant_300_for_int8": (lambda c: c(ol.stencil(blur, I8, ol.constant(300))), ValueError, "does not fit int8"),
    "stencil_rank_4": (lambda c: c(ol.stencil(lambda g: g(0, 0, 0, 0), np.zeros((2, 2, 2, 2)))), ValueError, "rank 1 to 3, not 4"),
    "stencil_rank_0": (lambda c: c(ol.stencil(lambda g: g(), np.array(1.0))), ValueError, "rank 1 to 3, not 0"),
    # filter, permute, scatter
    "filter_of_a_matrix": (lambda c: c(ol.filter(pred, A2)), ValueError, "must be 1-D"),
    "filter_of_a_0d_array": (lambda c: c(ol.filter(pred, np.array(1.0))), ValueError, "must be 1-D"),
    "permute_defaults_a_list": (lambda c: c(ol.permute(add, [0.0] * 8, ix_id, A)), TypeError, "expected an array or a delayed array"),
    "permute_destination_outside": (lambda c: c(ol.permute(add, np.zeros(4), ix_id, A)), ol.PermuteIndexError, "sends source element (4,) to (4,), outside"),
    "scatter_float_indices": (lambda c: c(ol.scatter(np.zeros(8), np.zeros(8), A)), TypeError, "'to' holds integer indices"),
    "scatter_bool_indices": (lambda c: c(ol.scatter(np.ones(8, bool), np.zeros(8), A)), TypeError, "'to' holds integer indices"),
    "scatter_lengths_differ": (lambda c: c(ol.scatter(np.arange(3), np.zeros(8), A)), ValueError, "'to' has 3 indices for 8 elements"),
    "scatter_destination_outside": (lambda c: c(ol.scatter(np.full(8, 20), np.zeros(8), A)), ol.PermuteIndexError, "to (20,), outside"),
    "scatter_negative_destination": (lambda c: c(ol.scatter(np.full(8, -5), np.zeros(8), A)), ol.PermuteIndexError, "to (-5,), outside"),
    # structural nodes
    "extend_spec_keeps_two_axes": (lambda c: c(ol.extend((ol.ALL, ol.ALL), A)), ValueError, "keeps 2 axes but the array has 1"),
    "extend_negative_extent": (lambda c: c(ol.extend((ol.ALL, -3), A)), ValueError, "non-negative extents"),
    "extend_float_extent": (lambda c: c(ol.extend((ol.ALL, 2.5), A)), TypeError, "entries are ALL or ints"),
    "slice_float_index": (lambda c: c(ol.slice(A2, (1.0, ol.ALL))), TypeError, "entries are ALL or ints"),
    "slice_spec_too_short": (lambda c: c(ol.slice(A2, (1,))), ValueError, "has 1 entries for an array of 2 axes"),
    "slice_spec_a_string": (lambda c: c(ol.slice(A2, "x")), TypeError, "entries are ALL or ints"),
    "slice_index_outside": (lambda c: c(ol.slice(A2, (10, ol.ALL))), IndexError, "index 10 is out of bounds for an axis of extent 3"),
    "reverse_of_a_0d_array": (lambda c: c(ol.reverse(np.array(1.0))), ValueError, "at least one axis"),
    "zip_with_of_two_ranks": (lambda c: c(ol.zip_with(add, A, A2)), OffloadError, "zip_with of arrays of rank 1 and 2"),
    "reshape_to_another_size": (lambda c: c(ol.reshape(A, 5)), OffloadError, "cannot reshape an array of shape (8,) into (5,)"),
    "backpermute_negative_shape": (lambda c: c(ol.backpermute(-4, ix_id, A)), ValueError, "must be >= 0"),
    "generate_float_shape": (lambda c: c(ol.generate(3.0, ix_id)), TypeError, "an int or a tuple of ints"),
    "generate_string_shape": (lambda c: c(ol.from_function("3", ix_id)), TypeError, "an int or a tuple of ints"),
    "reshape_negative": (lambda c: c(ol.reshape(A, -1)), ValueError, "must be >= 0"),
}
# fmt: on


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("name", sorted(API_MISTAKES))
def test_an_api_mistake_is_a_clear_error_naming_it(name, target):
    call, error, words = API_MISTAKES[name]
    with pytest.raises(error) as info:
        call(TARGETS[target])
    text = str(info.value)
    assert words in text, text
    _assert_clean(text)


CONFIG_MISTAKES = {
    "bounds_check": ("yes", TypeError, "takes True or False"),
    "fastmath": (2, TypeError, "takes True or False"),
    "determinism": ("x", ValueError, "'deterministic' or 'cross_target' or 'fast'"),
    "memory": ("x", ValueError, "'unified' or 'device'"),
    "pipeline": (3, TypeError, "takes a string or None"),
    "bounds_chek": (True, AttributeError, "did you mean 'bounds_check'"),
}


@pytest.mark.parametrize("setting", sorted(CONFIG_MISTAKES))
def test_a_bad_setting_is_refused_and_named(setting):
    value, error, words = CONFIG_MISTAKES[setting]
    before = vars(ol.config).copy()
    with pytest.raises(error, match=words.replace("(", r"\(")):
        setattr(ol.config, setting, value)
    assert vars(ol.config) == before


def test_explain_names_an_unknown_target():
    with pytest.raises(ValueError, match="target must be one of"):
        ol.explain(f, 4, target="tpu")


# -- collectives: a mistake in a node's function is located in that function ---------------


def combine_returns_a_string(a, b):
    return "x"


def combine_indexes_a_number(a, b):
    return a[0] + b[0]


def stencil_float_offset(get):
    return get(0.5)


def stencil_two_offsets_on_a_vector(get):
    return get(0, 1)


def stencil_no_offset(get):
    return get()


def stencil_returns_the_getter(get):
    return get


def stencil_passes_the_getter_on(get):
    return one(get)


def stencil_keyword_offset(get):
    return get(d0=1)


def map_makes_a_set(v):
    return {v}


def map_prints(v):
    print(v)
    return v


# fmt: off
LOCATED_COLLECTIVES = {
    "fold_combine_returns_a_string": (lambda: ol.fold(combine_returns_a_string, 0.0, A2), combine_returns_a_string),
    "fold_combine_indexes_a_number": (lambda: ol.fold(combine_indexes_a_number, 0.0, A2), combine_indexes_a_number),
    "scanl_combine_returns_a_string": (lambda: ol.scanl(combine_returns_a_string, 0.0, A), combine_returns_a_string),
    "permute_combine_returns_a_string": (lambda: ol.permute(combine_returns_a_string, np.zeros(8), ix_id, A), combine_returns_a_string),
    "permute_index_function_of_two_parameters": (lambda: ol.permute(add, np.zeros(8), add, A), add),
    "stencil_float_offset": (lambda: ol.stencil(stencil_float_offset, A), stencil_float_offset),
    "stencil_two_offsets_on_a_vector": (lambda: ol.stencil(stencil_two_offsets_on_a_vector, A), stencil_two_offsets_on_a_vector),
    "stencil_no_offset": (lambda: ol.stencil(stencil_no_offset, A), stencil_no_offset),
    "stencil_returns_the_getter": (lambda: ol.stencil(stencil_returns_the_getter, A), stencil_returns_the_getter),
    "stencil_passes_the_getter_on": (lambda: ol.stencil(stencil_passes_the_getter_on, A), stencil_passes_the_getter_on),
    "stencil_keyword_offset": (lambda: ol.stencil(stencil_keyword_offset, A), stencil_keyword_offset),
    "map_makes_a_set": (lambda: ol.map(map_makes_a_set, A), map_makes_a_set),
    "map_prints": (lambda: ol.map(map_prints, A), map_prints),
    "filter_predicate_makes_a_set": (lambda: ol.filter(map_makes_a_set, A), map_makes_a_set),
}
# fmt: on

# fmt: off
LOCATED_EXPECTED = {
    "fold_combine_returns_a_string": (AllocationNotAllowed, '"x"', "string literals allocate memory"),
    "fold_combine_indexes_a_number": (TypeMismatch, "a", "a Python float cannot be indexed"),
    "scanl_combine_returns_a_string": (AllocationNotAllowed, '"x"', "string literals allocate memory"),
    "permute_combine_returns_a_string": (AllocationNotAllowed, '"x"', "string literals allocate memory"),
    "permute_index_function_of_two_parameters": (TypeMismatch, "def add", "takes 2 index argument(s)"),
    "stencil_float_offset": (TypeMismatch, "get(0.5)", "getter index must give integers"),
    "stencil_two_offsets_on_a_vector": (TypeMismatch, "get(0, 1)", "reads an array of 1 dimensions"),
    "stencil_no_offset": (TypeMismatch, "get()", "reads an array of 1 dimensions"),
    "stencil_returns_the_getter": (TypeMismatch, "get", "cannot return a getter function"),
    "stencil_passes_the_getter_on": (TypeMismatch, "a", "cannot return a getter function"),
    "stencil_keyword_offset": (UnsupportedSyntax, "get(d0=1)", "keyword arguments to an element getter"),
    "map_makes_a_set": (AllocationNotAllowed, "{v}", "set literals allocate memory"),
    "map_prints": (UnresolvedCall, "print(v)", "print() cannot be called"),
    "filter_predicate_makes_a_set": (AllocationNotAllowed, "{v}", "set literals allocate memory"),
}
# fmt: on


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("name", sorted(LOCATED_COLLECTIVES))
def test_a_mistake_in_a_collectives_function_is_located_there(name, target):
    node, fn = LOCATED_COLLECTIVES[name]
    cls, caret, words = LOCATED_EXPECTED[name]
    with pytest.raises(OffloadError) as info:
        TARGETS[target](node())
    _assert_located(info.value, cls, caret, words, fn)


def _no_parameters():
    return 1.0


# fmt: off
ARITY_MISTAKES = {
    "fold_combine_of_three": (lambda: ol.fold(add3, 0.0, A2), add3, "missing the argument 'c'"),
    "fold_all_combine_of_three": (lambda: ol.fold_all(add3, 0.0, A), add3, "missing the argument 'c'"),
    "fold_combine_of_one": (lambda: ol.fold(one, 0.0, A2), one, "takes 1 arguments but 2 were given"),
    "scanl_combine_of_one": (lambda: ol.scanl(one, 0.0, A), one, "takes 1 arguments but 2 were given"),
    "permute_combine_of_one": (lambda: ol.permute(one, np.zeros(8), ix_id, A), one, "takes 1 arguments but 2 were given"),
    "filter_predicate_of_two": (lambda: ol.filter(add, A), add, "missing the argument 'b'"),
    "map_function_of_two": (lambda: ol.map(add, A), add, "missing the argument 'b'"),
    "zip_with_function_of_one": (lambda: ol.zip_with(one, A, A), one, "takes 1 arguments but 2 were given"),
    "generate_function_of_none": (lambda: ol.generate(3, _no_parameters), _no_parameters, "takes 0 arguments but 1 were given"),
    "traverse_function_of_one": (lambda: ol.traverse(A, one, one), one, "takes 1 arguments but 2 were given"),
}
# fmt: on


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("name", sorted(ARITY_MISTAKES))
def test_a_node_function_of_the_wrong_arity_is_a_type_mismatch_naming_its_definition(name, target):
    node, fn, words = ARITY_MISTAKES[name]
    with pytest.raises(TypeMismatch) as info:
        TARGETS[target](node())
    text = str(info.value)
    _assert_clean(text)
    assert words in text, text
    notes = [n.span for d in info.value.diagnostics for n in d.notes if n.span is not None]
    assert any(s.file == FILE and s.line == fn.__code__.co_firstlineno for s in notes), text
    assert "^" in text


# -- accepted corner cases give CPython's values ---------------------------------------------

U64 = np.arange(8, dtype=np.uint64)
I64 = np.arange(8, dtype=np.int64) - 4
SMALL = np.array([-128, -1, 0, 1, 127, 5, -7, 100], dtype=np.int8)
UBYTES = np.array([0, 1, 255, 3, 4, 5, 6, 7], dtype=np.uint8)
F32 = (np.arange(8, dtype=np.float32) - 3.5) * 1.5

plus_one, times_two = (lambda i: i + 1), (lambda i: i * 2)
LATE = [lambda i: i + k for k in range(3)]


def bool_or_float(i):
    if i > 2:
        return True
    return 1.5


def while_true_with_a_return(i):
    k = 0
    while True:
        k += 1
        if k > i:
            return k


def tuple_concatenation(i):
    t = (1, 2) + (i,)
    return t[2]


def uint64_plus_int64(i):
    return U64[i] + I64[i]


def int8_plus_uint8(i):
    return SMALL[i] + UBYTES[i]


def min_of_int8_and_float(i):
    return min(SMALL[i], 1.5)


def tuple_read_at_run_time(i):
    t = (1, 2.5, True)
    return t[i % 3]


def for_over_a_mixed_tuple(i):
    s = 0
    for v in (1, 2.5, True):
        s += v
    return s


def int8_overflow_wraps(i):
    return -SMALL[i] + SMALL[i] * SMALL[i]


def float32_floor_division_by_zero(i):
    return F32[i] // 0.0


def round_of_float32(i):
    return round(F32[i])


def while_else_with_break(i):
    k = 0
    while k < i:
        k += 1
        if k == 2:
            break
    else:
        k = -1
    return k


ACCEPTED = [
    (times_two, np.int64),
    (plus_one, np.int64),
    (LATE[0], np.int64),
    (bool_or_float, np.float64),
    (while_true_with_a_return, np.int64),
    (tuple_concatenation, np.int64),
    (uint64_plus_int64, np.float64),
    (int8_plus_uint8, np.int16),
    (min_of_int8_and_float, np.float64),
    (tuple_read_at_run_time, np.float64),
    (for_over_a_mixed_tuple, np.float64),
    (int8_overflow_wraps, np.int8),
    (float32_floor_division_by_zero, np.float32),
    (round_of_float32, np.int64),
    (while_else_with_break, np.int64),
]


@pytest.mark.parametrize(
    ("fn", "dtype"), ACCEPTED, ids=[f"{i}-{c[0].__name__}" for i, c in enumerate(ACCEPTED)]
)
def test_an_accepted_corner_case_gives_cpythons_values(fn, dtype):
    with np.errstate(all="ignore"):
        want = [fn(i) for i in range(8)]
    got = ol.compute_s(8, fn)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.array(want, dtype=dtype))
    np.testing.assert_array_equal(ol.compute_p(8, fn), got)


def _spins(i):
    while True:
        pass


def test_a_function_that_never_returns_says_so():
    with pytest.raises(TypeMismatch, match="never returns") as info:
        ol.compute_s(3, _spins)
    assert info.value.diagnostics[0].span.line == _spins.__code__.co_firstlineno


def _offsets_in_a_loop(get):
    s = 0.0
    for k in range(-1, 2):
        s += get(k)
    return s


def test_a_stencil_offset_known_only_at_run_time_is_located_at_the_read():
    with pytest.raises(TypeMismatch, match=r"get\(-1\), not get\(k\)") as info:
        ol.compute_s(ol.stencil(_offsets_in_a_loop, A))
    span = info.value.diagnostics[0].span
    assert span.file == FILE and span.text.strip() == "s += get(k)"
