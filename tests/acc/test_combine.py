"""A user's combine / index function compiled for the skeletons: typed by the operands'
dtypes through the ordinary frontend (NEP 50), checked by the restriction rules, emitted
as one function of scalars for the CPU and the GPU."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import offload as ol
from offload.acc.combine import compile_combine, compile_index_function
from offload.diagnostics import AllocationNotAllowed, OffloadError, TypeMismatch
from tests.acc.skeleton_refs import matmul2

pytestmark = pytest.mark.unit

F32, I8, I64 = np.dtype(np.float32), np.dtype(np.int8), np.dtype(np.int64)


def plus_one_half(a: Any, b: Any) -> Any:
    return a + b + 0.5


def test_operands_are_typed_by_their_dtypes_with_nep50_promotion() -> None:
    sf = compile_combine(plus_one_half, ((F32,), (F32,)), "ol_comb", "test")
    assert sf.result_dtypes == (F32,)  # a Python float does not widen float32
    src = sf.source(gpu=False)
    assert src.startswith("def ol_comb(p0, p1):")
    assert "return (r0,)" in src
    i8 = compile_combine(plus_one_half, ((I8,), (I8,)), "ol_comb", "test")
    assert i8.result_dtypes == (np.dtype(np.float64),)  # int8 + Python float -> float64


def test_tuple_operands_are_struct_of_arrays_leaves() -> None:
    sf = compile_combine(matmul2, ((I64,) * 4, (I64,) * 4), "ol_comb", "test")
    assert sf.params == [f"p{k}" for k in range(8)]
    assert sf.result_dtypes == (I64,) * 4


def _floor_sum(a: Any, b: Any) -> Any:
    return math.floor(a) + b


def test_cpu_and_gpu_sources_differ_only_in_target_math() -> None:
    sf = compile_combine(_floor_sum, ((F32,), (F32,)), "ol_comb", "test")
    assert "np.floor" in sf.source(gpu=False)
    assert "math.floor" in sf.source(gpu=True)


def test_captured_scalars_are_parameters_read_at_each_call() -> None:
    k = 3

    def scaled(a: Any, b: Any) -> Any:
        return a + b * k

    sf = compile_combine(scaled, ((I64,), (I64,)), "ol_comb", "test")
    assert sf.params == ["p0", "p1", "u0"]
    assert sf.captures() == [3]
    k = 5
    assert sf.captures() == [5]


def test_restriction_violations_are_reported_with_a_span() -> None:
    def bad(a: Any, b: Any) -> Any:
        t = {a: b}  # a dict is a dynamic allocation (a list display is a local array)
        return t[a]

    with pytest.raises(AllocationNotAllowed, match="test_combine.py"):
        compile_combine(bad, ((I64,), (I64,)), "ol_comb", "test")


def test_index_function_of_the_wrong_arity_is_a_type_error() -> None:
    def ix(i: int, j: int) -> Any:
        return (j, i)

    with pytest.raises(TypeMismatch, match="rank 1"):
        compile_index_function(ix, 1, "ixf", "test")


def test_index_function_reads_its_captured_array() -> None:
    data = np.array([4, 2, 7])

    def ix(i: int) -> Any:
        return data[i] // 2

    sf = compile_index_function(ix, 1, "ixf", "test")
    assert sf.params == ["p0", "u0"]
    assert sf.captures()[0] is data
    assert "u0[np.uint64(p0)]" in sf.source(gpu=True)


def test_structural_keys_tell_scan_forms_apart() -> None:
    from offload.acc import scan as S
    from offload.frontend.nodes import delayed_key

    a = np.arange(4.0)

    def f(x: Any, y: Any) -> Any:
        return x + y

    keys = {
        delayed_key(n)
        for n in (S.scanl(f, 0.0, a), S.scanl1(f, a), S.scanr(f, 0.0, a), S.scanr1(f, a),
                  *S.scanl_total(f, 0.0, a), S.scanl1_seg(f, a, np.array([4])))
    }  # fmt: skip
    assert len(keys) == 7


def _pair_of(a, b):
    total = a + b
    return (a, total)  # the line each error below points at


def _located_at_the_return(err: OffloadError) -> None:
    (diag,) = err.diagnostics
    assert diag.span is not None and diag.span.file == __file__
    assert diag.span.text.strip() == "return (a, total)  # the line each error below points at"


@pytest.mark.cpu
@pytest.mark.parametrize(
    "build",
    [
        lambda a: ol.fold(_pair_of, 0.0, a),
        lambda a: ol.fold_all(_pair_of, 0.0, a),
        lambda a: ol.scanl(_pair_of, 0.0, a),
        lambda a: ol.scanl1(_pair_of, a),
        lambda a: ol.permute(_pair_of, np.zeros(4), lambda i: i, a),
    ],
)
def test_a_combine_function_returning_the_wrong_shape_is_located_at_its_return(build) -> None:
    with pytest.raises(TypeMismatch) as info:
        ol.compute_s(build(np.arange(4.0)))
    _located_at_the_return(info.value)


@pytest.mark.cpu
def test_a_predicate_or_index_function_of_the_wrong_results_is_located() -> None:
    a = np.arange(4.0)
    with pytest.raises(TypeMismatch, match="2 values, not one") as info:
        ol.compute_s(ol.filter(lambda x: (x > 1, x > 2), a))
    assert info.value.diagnostics[0].span.text.strip().startswith("ol.compute_s(ol.filter(")
    with pytest.raises(TypeMismatch, match="index function returns") as info:
        ol.compute_s(ol.permute(lambda u, v: u + v, np.zeros(4), lambda i: i * 0.5, a))
    assert info.value.diagnostics[0].span is not None
