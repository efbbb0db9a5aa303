"""The ``narrow`` pass: i64 values that provably fit in i32 become i32, values unchanged.

Golden checks on what is narrowed (stencil clamps and loop counters) and what is not
(products of two indices, values that may overflow, loads of int64 data); the semantic
check runs random programs through the interpreter before and after the pass, with
captured scalars drawn inside the pass's assumption and at its edges.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.ir.interp import compute
from offload.ir.printer import print_function
from offload.ir.verifier import verify
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.passes.narrow import NARROW_LIMIT, NarrowIndexArithmetic
from tests.strategies.programs import programs, same_results

pytestmark = pytest.mark.unit

NARROW = NarrowIndexArithmetic()


def _optimised(fn, rank):
    return run_pipeline(check_and_lower(fn, rank).ir, CompileOptions(verify=True))


def _lines(ir, opcode):
    """The printed lines of ``opcode`` ops (``%v = add %a, %b : i32``)."""
    return [ln.strip() for ln in print_function(ir).splitlines() if f"= {opcode} " in ln]


img = np.arange(30, dtype=np.float32).reshape(5, 6)


def clamp_stencil(y, x):
    h, w = img.shape
    acc = np.float32(0.0)
    for a in range(3):
        yy = min(max(y + a - 1, 0), h - 1)
        for b in range(3):
            xx = min(max(x + b - 1, 0), w - 1)
            acc += img[yy, xx]
    return acc


def test_stencil_clamps_and_loop_counters_become_i32_and_loads_take_them():
    ir = _optimised(clamp_stencil, 2)
    out = NARROW.run(ir)
    verify(out)
    for opcode in ("add", "min", "max", "lt"):
        assert _lines(out, opcode), opcode
    ints = [ln for op in ("add", "min", "max") for ln in _lines(out, op) if "f32" not in ln]
    assert ints and all(ln.endswith(": i32") for ln in ints)
    # The load's indices are the i32 clamps themselves (the kernel forms a 32-bit offset).
    (load,) = _lines(out, "load")
    text = print_function(out)
    for idx in re.findall(r"%[\w.]+", load)[2:]:
        (defn,) = [ln for ln in text.splitlines() if ln.strip().startswith(f"{idx} = ")]
        assert defn.rstrip().endswith(": i32"), defn


def test_the_pass_does_not_change_the_function_it_is_handed():
    ir = _optimised(clamp_stencil, 2)
    before = print_function(ir)
    NARROW.run(ir)
    assert print_function(ir) == before


def test_stencil_values_are_unchanged():
    ir = _optimised(clamp_stencil, 2)
    (want,) = compute(ir, (5, 6), [img])
    (got,) = compute(NARROW.run(ir), (5, 6), [img])
    np.testing.assert_array_equal(got, want)


def product_of_indices(i, j):
    return i * j + 1


def test_a_product_of_two_indices_may_not_fit_and_stays_i64():
    out = NARROW.run(_optimised(product_of_indices, 2))
    (mul,) = _lines(out, "mul")
    assert mul.endswith(": i64")


big = np.int64(3)


def shifted(i):
    return (i + big) % 7


def test_captured_scalar_within_the_assumption_narrows_the_sum():
    out = NARROW.run(_optimised(shifted, 1))
    (add,) = _lines(out, "add")
    assert add.endswith(": i32")
    # ... and the result (the function returns i64) is widened back.
    assert print_function(out).count("cast") >= 2


def test_a_smaller_assumed_limit_leaves_more_in_i64():
    ir = _optimised(shifted, 1)
    assert _lines(NarrowIndexArithmetic(limit=2**31).run(ir), "add")[0].endswith(": i64")


def growing(i):
    s = i + 1
    for _ in range(40):
        s = s * 3
    return s


def test_a_value_that_may_overflow_i32_stays_i64():
    out = NARROW.run(_optimised(growing, 1))
    assert all(ln.endswith(": i64") for ln in _lines(out, "mul"))
    (want,) = compute(_optimised(growing, 1), (4,), [])
    (got,) = compute(out, (4,), [])
    np.testing.assert_array_equal(got, want)  # 3**40 * 4 wraps in int64, as before


counts = np.array([5, 1, 7, 2**40], dtype=np.int64)


def loaded(i):
    return counts[i] + 1


def test_int64_data_loaded_from_an_array_stays_i64():
    out = NARROW.run(_optimised(loaded, 1))
    assert all(ln.endswith(": i64") for ln in _lines(out, "add"))


@settings(max_examples=60, deadline=None)
@given(program=programs())
def test_narrowing_random_programs_keeps_interpreter_results(program):
    fn, shape, captures = program
    want = compute(fn, shape, captures)
    out = NARROW.run(fn)
    verify(out)
    assert same_results(want, compute(out, shape, captures)), print_function(out)


k1 = np.int64(1)
k2 = np.int64(1)
k3 = np.int64(1)


def index_formula(i, j):
    q = (i * k1 + j - k2) // 3
    r = (j + k3) % 5
    t = q - r if i > j else q + r
    return t * 2 + min(i - k3, j + k1)


_edge = st.sampled_from([-NARROW_LIMIT, -NARROW_LIMIT + 1, -1, 0, 1, NARROW_LIMIT - 1])
_scalars = st.one_of(st.integers(-NARROW_LIMIT, NARROW_LIMIT - 1), _edge)


@settings(max_examples=60, deadline=None)
@given(a=_scalars, b=_scalars, c=_scalars, shape=st.tuples(st.integers(1, 4), st.integers(1, 4)))
def test_captured_scalars_anywhere_in_the_assumption_give_the_same_values(a, b, c, shape):
    ir = _optimised(index_formula, 2)
    values = {"k1": a, "k2": b, "k3": c}
    caps = [np.int64(values[cap.name]) for cap in ir.captures]
    want = compute(ir, shape, caps)
    assert same_results(want, compute(NARROW.run(ir), shape, caps))


grid = np.zeros((6, 6), np.float32)  # read over (5, 5): i + 1 stays in bounds


def neighbours(i, j):
    return grid[i - 1, j] + grid[i + 1, j] + grid[i, j - 1] + grid[i, j + 1]


def test_neighbour_indices_outside_loops_are_narrowed_for_32_bit_offsets():
    out = NARROW.run(_optimised(neighbours, 2))
    int_adds = [ln for ln in _lines(out, "add") if "f32" not in ln]
    assert int_adds and all(ln.endswith(": i32") for ln in int_adds)
    (want,) = compute(_optimised(neighbours, 2), (5, 5), [grid + np.arange(6, dtype=np.float32)])
    (got,) = compute(out, (5, 5), [grid + np.arange(6, dtype=np.float32)])
    np.testing.assert_array_equal(got, want)


tree = np.arange(15, dtype=np.int64)


def descend(i):
    o = 0
    for _ in range(3):
        o = 2 * o + 1 + (1 if i > tree[o] else 0)  # facts cannot bound o
    return o


@pytest.mark.parametrize("trust", [True, False])
def test_an_unbounded_load_index_is_truncated_only_without_bounds_checks(trust):
    out = NarrowIndexArithmetic(trust_load_indices=trust).run(_optimised(descend, 1))
    text = print_function(out)
    (load,) = _lines(out, "load")
    idx = re.findall(r"%[\w.]+", load)[2]
    (defn,) = [ln for ln in text.splitlines() if ln.strip().startswith(f"{idx} = ")]
    assert (": i32" in defn) is trust, defn
    (want,) = compute(_optimised(descend, 1), (8,), [tree])
    (got,) = compute(out, (8,), [tree])
    np.testing.assert_array_equal(got, want)
