"""The generated kernel source: parameters, thread mapping, line comments."""

from __future__ import annotations

import re

import numpy as np
import pytest

from offload.ptx.kernel_source import ParamKind, build_kernel_source
from offload.ptx.passes.narrow import NarrowIndexArithmetic
from tests.ptx.conftest import kernel
from tests.ptx.irfixtures import ALL as IR

pytestmark = pytest.mark.unit


def test_params_are_extents_outputs_then_captures_in_order():
    ks = kernel("saxpy")
    kinds = [(p.kind, p.index) for p in ks.params]
    assert kinds == [
        (ParamKind.EXTENT, 0),
        (ParamKind.OUT, 0),
        (ParamKind.PTR, 0),
        (ParamKind.CAP_EXTENT, 0),
        (ParamKind.CAP_STRIDE, 0),
        (ParamKind.PTR, 1),
        (ParamKind.CAP_EXTENT, 1),
        (ParamKind.CAP_STRIDE, 1),
        (ParamKind.SCALAR, 2),
    ]


def test_fastest_thread_dimension_walks_the_last_index():
    src = kernel("square_or_negate").source
    assert "ix1 = tx" in src  # x threads -> last axis (contiguous)
    assert "ix0 = ty" in src  # y threads -> the axis before it


def test_rank_3_maps_each_axis_to_a_grid_axis_and_never_divides():
    src = kernel("index_arith").source
    mapping = src.split("OFFLOAD_BODY")[0] if "OFFLOAD_BODY" in src else src
    assert "ix0 = plane" in src and "ix1 = ty" in src and "ix2 = tx" in src
    assert "plane = tz" in src
    assert "rest" not in mapping and " % " not in mapping and "//" not in mapping


def test_rank_4_splits_the_leading_axes_once_per_plane_not_per_row():
    from offload.ptx.kernel_source import _skeleton

    src = _skeleton("k", [], 4, 64)
    outer, inner = src.split("while ix2 < nrows:")
    assert "rest % oln1" in outer and "ix0 = rest" in outer
    assert "%" not in inner and "//" not in inner


def test_loads_index_with_element_strides():
    assert "cap0[ix0 * cap0s0 + ix1 * cap0s1]" in kernel("square_or_negate").source


def test_unit_stride_kernel_adds_the_last_index_unscaled():
    fn = NarrowIndexArithmetic().run(IR["square_or_negate"]())
    src = build_kernel_source(fn, index_bits=32, unit_last=True).source
    assert re.search(r"cap0\[nsw_add_i32\(nsw_mul_i32\(\w+, cap0s0\), \w+\)\]", src)
    assert src.count("cap0s1") == 1  # a parameter still (one ABI), never read


def test_grid_stride_counters_are_int64():
    src = kernel("saxpy").source
    assert "tx = np.int64(np.int64(cuda.threadIdx.x) + " in src
    assert "sx = np.int64(np.int64(cuda.blockDim.x) * np.int64(cuda.gridDim.x))" in src


def test_32_bit_kernel_keeps_every_counter_and_offset_int32():
    fn = NarrowIndexArithmetic().run(IR["square_or_negate"]())
    ks = build_kernel_source(fn, index_bits=32)
    assert ks.index_dtype == np.dtype(np.int32)
    src = ks.source
    # numba computes int32 op int32 in int64: every counter update is wrapped back.
    assert "ix1 = np.int32(ix1 + sx)" in src and "ix0 = np.int32(ix0 + sy)" in src
    assert "plane = np.int32(plane + sz)" in src
    assert "lin = np.int32(lrow * nlast + ix1)" in src
    # The index parameters reach the load as int32 (narrow truncates them): the offset is
    # an int32 sum of int32 products, which the guard keeps from overflowing (nsw).
    assert re.search(
        r"cap0\[nsw_add_i32\(nsw_mul_i32\(\w+, cap0s0\), nsw_mul_i32\(\w+, cap0s1\)\)\]", src
    )
    assert "np.int64(" not in src.split("while plane < nplanes:")[0]


def test_index_bits_other_than_32_or_64_are_refused():
    with pytest.raises(ValueError, match="32 or 64"):
        build_kernel_source(IR["saxpy"](), index_bits=16)
