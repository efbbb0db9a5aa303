"""Scans under the CUDA simulator (the GPU skeleton's kernel text): every form against
Python loops, a multi-level chunk tree, segments, tuples, and cross_target bits equal to
compute_s."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.acc import scan as S
from offload.acc import scan_job as SJ
from offload.acc.skeletons.direct import compute
from tests.acc.sim_lane import needs_simulator
from tests.acc.skeleton_refs import add, every_scan_form, matmul2, ref_scan, ref_seg_scan

pytestmark = [pytest.mark.sim, needs_simulator]


@settings(max_examples=10)
@given(shape=st.lists(st.integers(0, 70), min_size=1, max_size=2).map(tuple),
       seed=st.integers(0, 2**32 - 1))  # fmt: skip
def test_every_scan_form_in_the_simulator(shape: tuple[int, ...], seed: int) -> None:
    a = np.random.default_rng(seed).integers(-(2**40), 2**40, shape, dtype=np.int64)
    for node, want in every_scan_form(a):
        got = np.asarray(compute(node, "gpu-sim"))
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_three_level_tree_equals_compute_s_in_cross_target_mode() -> None:
    a = np.random.default_rng(4).standard_normal(1100).astype(np.float32)  # 35 chunks
    sim = np.asarray(compute(S.scanl1(add, a), "gpu-sim", "cross_target"))
    seq = np.asarray(compute(S.scanl1(add, a), "cpu-seq", "cross_target"))
    assert sim.tobytes() == seq.tobytes()
    # the default mode (one pass): the same bits run to run and at another address
    once = np.asarray(compute(S.scanl1(add, a), "gpu-sim"))
    moved = np.empty(a.size + 3, np.float32)[3:]
    moved[:] = a
    again = np.asarray(compute(S.scanl1(add, moved), "gpu-sim"))
    assert again.tobytes() == once.tobytes()


@pytest.mark.parametrize(("dtype", "tail"), [("float32", True), ("int64", True),
                                             ("float32", False)])  # fmt: skip
def test_one_block_tail_equals_the_level_by_level_tree(
    dtype: str, tail: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2 rows x 40_000: 1250 chunks per row, whose scan (lengths 1250, 40, 2) one block
    # finishes in one launch (or, with the tail off, one launch pair per level as on a
    # large input); compute_s runs the same tree level by level
    if not tail:
        monkeypatch.setattr(SJ, "TAIL_MAX", 0)
    monkeypatch.setattr(SJ.ScanJob, "onepass_threads", lambda self: None)  # (integers: the tree)
    a = (np.random.default_rng(6).standard_normal((2, 40_000)) * 100).astype(dtype)
    node = S.scanl(add, a.dtype.type(1), a)
    sim = np.asarray(compute(node, "gpu-sim", "cross_target"))
    seq = np.asarray(compute(node, "cpu-seq", "cross_target"))
    assert sim.tobytes() == seq.tobytes()


def test_segmented_scan_with_empty_segments_in_the_simulator() -> None:
    a = np.arange(1, 41, dtype=np.int32).reshape(2, 20)
    seg = np.array([0, 5, 0, 15, 0])
    for z in (None, 1):
        node = S.scanl1_seg(add, a, seg) if z is None else S.scanl_seg(add, z, a, seg)
        np.testing.assert_array_equal(compute(node, "gpu-sim"), ref_seg_scan(add, z, a, seg))


def test_matrix_product_scan_in_the_simulator() -> None:
    rng = np.random.default_rng(9)
    comps = [rng.integers(-2, 3, 45, dtype=np.int64) for _ in range(4)]
    got = compute(S.scanr1(matmul2, tuple(comps)), "gpu-sim")
    for g, w in zip(got, ref_scan(matmul2, None, comps, right=True), strict=True):
        np.testing.assert_array_equal(g, w)
