"""The GPU fold's tail (``offload.acc.fold_tail``): a tree of two or more stages runs its
first stage as an element kernel and everything after it in one skeleton launch, and the
bits are those of the staged tree -- the interpreter running the wide tree, and
``compute_s`` under ``cross_target`` -- for commuting (strided) and non-commuting
(contiguous) combines, tuples, rows, ``fold1`` and captured values.

    NUMBA_ENABLE_CUDASIM=1 OFFLOAD_GPU_SIMULATOR=1 python -m pytest -m sim tests/acc
"""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from offload.acc import fold_tail
from offload.acc.plan import FINAL, WIDE_CHUNK
from tests.acc.fold_reference import interpret, same_bits
from tests.acc.sim_lane import GPU_SIMULATOR_LANE, cross_target_s

pytestmark = GPU_SIMULATOR_LANE

TWO_STAGES = FINAL * WIDE_CHUNK + 1
"""The shortest row whose wide tree has two stages."""


def add(a, b):
    return a + b


def larger(a, b):
    return a if a > b else b


def mat2(a, b):
    a0, a1, a2, a3 = a
    b0, b1, b2, b3 = b
    return (a0 * b0 + a1 * b2, a0 * b1 + a1 * b3, a2 * b0 + a3 * b2, a2 * b1 + a3 * b3)


@pytest.fixture
def tails(monkeypatch):
    """The number of folds that ran their tail in one launch."""
    calls = []
    real = fold_tail.finish

    def spy(*args, **kwargs):
        done = real(*args, **kwargs)
        calls.append(done is not None)
        return done

    monkeypatch.setattr(fold_tail, "finish", spy)
    return calls


def check(node, tails, tried=1):
    got = ol.compute_g(node)
    assert tails == [False] * (tried - 1) + [True]
    assert same_bits(got, interpret(node, "cross_target"))
    assert same_bits(got, cross_target_s(node))


@pytest.mark.parametrize("n", [TWO_STAGES, 3 * TWO_STAGES + 17])
def test_a_float_sum_of_two_or_more_stages_keeps_the_staged_bits(n, tails):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    check(ol.fold_all(add, 0.0, x), tails)


def test_fold1_and_rows(tails):
    x = np.random.default_rng(3).standard_normal((3, 2 * TWO_STAGES)).astype(np.float32)
    check(ol.fold1(larger, x), tails)


def test_a_non_commuting_tuple_combine_keeps_the_order(tails):
    rng = np.random.default_rng(5)
    pick = np.array([[1, 1, 0, 1], [1, 0, 1, 1], [0, 1, 1, 0], [2, 1, 1, 1]])[
        rng.integers(0, 4, 2 * TWO_STAGES)
    ]
    m = tuple(np.ascontiguousarray(pick[:, k]).astype(np.int64) for k in range(4))
    check(ol.fold_all(mat2, (1, 0, 0, 1), m), tails)


def test_a_combine_with_a_captured_value_and_a_fused_producer(tails):
    x = np.random.default_rng(7).standard_normal(TWO_STAGES * 2).astype(np.float64)
    y = np.random.default_rng(8).standard_normal(TWO_STAGES * 2).astype(np.float64)
    cap = 0.5

    def capped(a, b):
        return min(a + b, cap * 1e6)

    check(ol.fold_all(capped, 0.0, ol.zip_with(lambda p, q: p * q, x, y)), tails)


def test_a_one_stage_tree_over_an_array_is_one_launch_over_a_producer_two_kernels(tails):
    x = np.arange(FINAL * WIDE_CHUNK // 2, dtype=np.float32)
    check(ol.fold_all(add, 0.0, x), tails)  # the tail reads the array itself
    tails.clear()
    got = ol.compute_g(ol.fold_all(add, 0.0, ol.map(lambda v: v * 2.0, x)))
    assert tails == [] and float(got) == 2 * float(np.sum(x, dtype=np.float64))


def keep_first(a, b):
    return a


@pytest.mark.parametrize("n", [TWO_STAGES, 2 * TWO_STAGES + 3])
def test_a_non_commuting_combine_over_a_long_array_reads_contiguous_runs(n, tails):
    """Rows longer than the tail's shared buffer (4096 float32): its first stage reads
    them from global memory, in contiguous runs for a combine that does not commute."""
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    check(ol.fold_all(keep_first, np.float32(0.0), x), tails)
    tails.clear()
    check(ol.fold1(keep_first, x), tails)


def test_rows_too_long_for_shared_memory_take_more_element_stages_first(tails, monkeypatch):
    """With small chunks (a deep tree) and room for 128 float32: the tail cannot take the
    array itself nor the first stage's 1025 partials; the first two stages run as element
    kernels, the tail takes the rest (reading the second's 257 partials from global
    memory) and the final fold."""
    from offload.acc import plan
    from offload.acc.skeletons import fold_src

    monkeypatch.setattr(plan, "WIDE_CHUNK", 4)
    monkeypatch.setattr(plan, "FINAL", 4)
    monkeypatch.setattr(fold_src, "SHARED_BYTES", 1024)
    x = np.random.default_rng(11).standard_normal(4097).astype(np.float32)
    check(ol.fold_all(add, 0.0, x), tails, tried=3)


def test_a_fold_of_bools_keeps_its_element_stages(tails):
    def either(a, b):
        return a or b

    x = np.zeros(TWO_STAGES * 2, np.bool_)
    x[-3] = True
    got = ol.compute_g(ol.fold_all(either, False, x))
    assert bool(got) is True and not any(tails)


def pair_add(a, b):
    return a[0] + b[0], a[1] * b[1]


def test_a_commuting_tuple_combine_takes_strided_stages(tails):
    from offload.acc.commute import commutes

    assert commutes(pair_add)
    rng = np.random.default_rng(13)
    x = rng.standard_normal(2 * TWO_STAGES).astype(np.float32)
    y = (1.0 + rng.standard_normal(2 * TWO_STAGES) * 1e-3).astype(np.float64)
    check(ol.fold_all(pair_add, (0.0, 1.0), (x, y)), tails)


@pytest.mark.parametrize("wrap", ["ArrayInterface", "DLPackTensor"])
def test_another_librarys_array_is_read_through_the_capture_path(wrap, tails):
    """A torch- or JAX-like array (by its array interface or DLPack alone) is not read by
    the tail as it is: the first stage's element kernel captures it, as any capture."""
    from tests.api import test_interop

    x = np.random.default_rng(17).standard_normal(2 * TWO_STAGES)
    got = ol.compute_g(ol.fold_all(add, 0.0, getattr(test_interop, wrap)(x)))
    assert same_bits(got, ol.compute_g(ol.fold_all(add, 0.0, x)))
