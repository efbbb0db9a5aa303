"""The PTX the GPU backend emits, checked as text (no GPU needed)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from offload.ptx.inspect import ptxas_resources
from tests.ptx.conftest import ptx
from tests.ptx.irfixtures import ALL

pytestmark = pytest.mark.ptx


def _entry_params(text: str, name: str) -> list[str]:
    m = re.search(rf"\.visible \.entry {name}\((.*?)\)", text, re.S)
    assert m is not None, f"no entry {name}"
    return re.findall(r"\.param \.(\w+) ", m.group(1))


def test_entry_takes_raw_pointers_int64_extents_and_a_typed_scalar():
    # saxpy: extent, out, x (ptr, extent, stride), y (ptr, extent, stride), alpha f32.
    assert _entry_params(ptx("saxpy"), "offload_saxpy") == ["u64"] * 8 + ["f32"]


def test_entry_of_a_rank_3_kernel_with_three_results_has_no_capture_params():
    assert _entry_params(ptx("index_arith"), "offload_index_arith") == ["u64"] * 6


@pytest.mark.parametrize("name", sorted(ALL))
def test_simple_kernels_use_no_local_memory(name):
    assert ".local" not in ptx(name)


def test_float32_true_division_is_ieee_rounded():
    text = ptx("ratio")
    assert re.search(r"\bdiv\.rn\.f32\b", text)
    assert not re.search(r"\bdiv\.(approx|full)\.f32\b", text)


def test_loads_go_through_global_memory_with_element_typed_width():
    assert re.search(r"\bld\.global\.f32\b", ptx("saxpy"))
    assert re.search(r"\bld\.global\.f64\b", ptx("row_sum"))


def test_index_arithmetic_is_64_bit():
    text = ptx("square_or_negate")
    # Offsets i*s0 + j*s1 and the grid-stride counters are int64 (shapes beyond 2**31).
    assert re.search(r"\bmul\.lo\.s64\b", text)
    assert re.search(r"\badd\.s64\b", text)
    assert re.search(r"\bsetp\.\w+\.s64\b", text)


def test_float32_stays_float32_without_float64_intermediates():
    text = ptx("square_or_negate")
    assert re.search(r"\bmul\.(rn\.)?f32\b", text)
    assert not re.search(r"\bcvt\.f64\.f32\b", text)


def test_mul_add_is_not_contracted_without_fastmath_and_is_with_it():
    # Without fastmath every op rounds like NumPy; fastmath allows fused multiply-add.
    assert not re.search(r"\bfma\.", ptx("saxpy"))
    assert re.search(r"\bfma\.rn(\.ftz)?\.f32\b", ptx("saxpy", fastmath=True))


def _reciprocal_norm_ptx(fastmath: bool) -> str:
    from offload.lowering import check_and_lower
    from offload.opt.manager import run_pipeline
    from offload.options import CompileOptions
    from offload.ptx.compile import compile_ptx
    from offload.ptx.kernel_source import build_kernel_source

    ir = run_pipeline(check_and_lower(_reciprocal_norm, 1).ir, CompileOptions(fastmath=fastmath))
    return compile_ptx(build_kernel_source(ir), "norm", (9, 0), fastmath=fastmath)


_xs = np.ones(8, np.float32)


def _reciprocal_norm(i):
    return 1.0 / np.sqrt(_xs[i] * _xs[i] + np.float32(1.0))


def test_one_over_sqrt_is_one_rsqrt_instruction_only_under_fastmath():
    exact, fast = _reciprocal_norm_ptx(False), _reciprocal_norm_ptx(True)
    assert re.search(r"\bsqrt\.rn\.f32\b", exact) and not re.search(r"\brsqrt\.", exact)
    assert re.search(r"\brsqrt\.approx(\.ftz)?\.f32\b", fast)
    assert not re.search(r"\b(sqrt|div|rcp)\.\w+", fast)


def test_bool_results_are_stored_as_bytes():
    text = ptx("index_arith")
    assert re.search(r"\bst\.global\.u8\b", text)
    assert re.search(r"\bst\.global\.f64\b", text)
    assert re.search(r"\bst\.global\.u64\b", text)


def test_bounds_checked_kernel_takes_the_fault_record_and_records_faults():
    text = ptx("row_sum", bounds_check=True)
    params = _entry_params(text, "offload_row_sum")
    assert len(params) == len(_entry_params(ptx("row_sum"), "offload_row_sum")) + 1
    assert re.search(r"\bst\.global\.u64\b", text)  # the fault record's fields


def test_ptxas_reports_no_spills_for_the_loop_kernel():
    res = ptxas_resources(ptx("row_sum"), (9, 0))
    if res is None:
        pytest.skip("no ptxas on this machine (the CUDA toolkit is not installed)")
    assert res["local_size_bytes"] == 0
    assert 0 < res["num_regs"] <= 64
