"""Scans on the CPU targets against Python loops: every form, ranks 1-3, dtypes int8 to
float64 and bool, tuples, a non-commutative combine, segment descriptors, determinism."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.acc import scan as S
from offload.acc import scan_job as SJ
from offload.acc.skeletons.direct import compute
from offload.diagnostics import TypeMismatch
from tests.acc.skeleton_refs import (
    add,
    bitor,
    matmul2,
    max_first_nan,
    ref_scan,
    ref_seg_scan,
)

pytestmark = pytest.mark.cpu

TARGETS = ["cpu-seq", "cpu-par"]
shapes = st.lists(st.integers(0, 40), min_size=1, max_size=3).map(tuple)


@pytest.fixture(autouse=True)
def chunk_tree_on_compute_p(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests' rows are short: without this, compute_p would scan them as one chunk
    (``CPU_SEQUENTIAL_BELOW``) and its chunk tree would go untested."""
    monkeypatch.setattr(SJ, "CPU_SEQUENTIAL_BELOW", 0)


def test_short_rows_on_compute_p_are_compute_ss_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SJ, "CPU_SEQUENTIAL_BELOW", 1 << 20)
    x = np.random.default_rng(4).standard_normal(200_000).astype(np.float32)
    seq = np.asarray(compute(S.scanl1(add, x), "cpu-seq"))
    assert np.asarray(compute(S.scanl1(add, x), "cpu-par")).tobytes() == seq.tobytes()
    monkeypatch.setattr(SJ, "CPU_SEQUENTIAL_BELOW", 0)  # the tree: other float bits
    assert np.asarray(compute(S.scanl1(add, x), "cpu-par")).tobytes() != seq.tobytes()


def _forms(a: Any) -> dict[str, tuple[Any, list[np.ndarray[Any, Any]]]]:
    """Each scan form of ``add`` over ``a`` and its reference result."""
    n = a.shape[-1]
    left_z, right_z = ref_scan(add, 0, [a])[0], ref_scan(add, 0, [a], right=True)[0]
    return {
        "scanl": (S.scanl(add, 0, a), [left_z]),
        "scanl1": (S.scanl1(add, a), ref_scan(add, None, [a])),
        "scanr": (S.scanr(add, 0, a), [right_z]),
        "scanr1": (S.scanr1(add, a), ref_scan(add, None, [a], right=True)),
        "scanl_total": (S.scanl_total(add, 0, a), [left_z[..., :n], left_z[..., n]]),
        "scanr_total": (S.scanr_total(add, 0, a), [right_z[..., 1:], right_z[..., 0]]),
    }


def _get(node: Any, target: str, mode: str = "deterministic") -> list[np.ndarray[Any, Any]]:
    if isinstance(node, tuple):
        return [np.asarray(compute(p, target, mode)) for p in node]
    return [np.asarray(compute(node, target, mode))]


@settings(max_examples=25)
@given(shape=shapes, seed=st.integers(0, 2**32 - 1))
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mode", ["deterministic", "cross_target"])
def test_every_scan_form_equals_python_loops_on_int64(
    target: str, mode: str, shape: tuple[int, ...], seed: int
) -> None:
    a = np.random.default_rng(seed).integers(-(2**62), 2**62, shape, dtype=np.int64)
    for form, (node, want) in _forms(a).items():
        got = _get(node, target, mode)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype, form
            np.testing.assert_array_equal(g, w, err_msg=form)


@pytest.mark.parametrize(
    "dtype", ["int8", "int16", "int32", "int64", "uint8", "uint64", "float32", "float64", "bool"]
)
def test_scan_keeps_the_dtype_and_sequential_float_order(dtype: str) -> None:
    rng = np.random.default_rng(7)
    a = (rng.random((3, 77)) * 100).astype(dtype)
    f = bitor if dtype == "bool" else add
    want = ref_scan(f, None, [a])[0]
    got = np.asarray(compute(S.scanl1(f, a), "cpu-seq"))
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)  # compute_s folds left to right: exact
    par = np.asarray(compute(S.scanl1(f, a), "cpu-par"))
    np.testing.assert_allclose(par.astype(np.float64), want.astype(np.float64), rtol=1e-5)


def test_matrix_product_scan_keeps_operand_order() -> None:
    rng = np.random.default_rng(3)
    comps = [rng.integers(-3, 4, (2, 70), dtype=np.int64) for _ in range(4)]
    for right in (False, True):
        want = ref_scan(matmul2, (1, 0, 0, 1), comps, right=right)
        make = S.scanr if right else S.scanl
        for target in TARGETS:
            got = compute(make(matmul2, (1, 0, 0, 1), tuple(comps)), target, "cross_target")
            assert isinstance(got, tuple) and len(got) == 4
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g, w)


def test_max_keeping_the_first_nan() -> None:
    a = np.array([1.0, 3.0, np.nan, 5.0, np.nan, 2.0, 9.0])
    want = ref_scan(max_first_nan, None, [a])[0]
    for target in TARGETS:
        got = compute(S.scanl1(max_first_nan, a), target)
        np.testing.assert_array_equal(got, want)
    assert np.isnan(want[2:]).all()


segs = st.lists(st.integers(0, 12), min_size=0, max_size=8)


@settings(max_examples=25)
@given(seg=segs, rows=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
@pytest.mark.parametrize("target", TARGETS)
def test_segmented_scans_equal_a_scan_per_segment(
    target: str, seg: list[int], rows: int, seed: int
) -> None:
    n = sum(seg)
    a = np.random.default_rng(seed).integers(-100, 100, (rows, n), dtype=np.int32)
    lengths = np.array(seg, dtype=np.int64)
    for z in (None, 5):
        node = S.scanl1_seg(add, a, lengths) if z is None else S.scanl_seg(add, z, a, lengths)
        got = np.asarray(compute(node, target, "cross_target"))
        want = ref_seg_scan(add, z, a, lengths)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_one_segment_is_the_whole_scan() -> None:
    a = np.arange(100, dtype=np.int64)
    got = compute(S.scanl1_seg(add, a, np.array([100])), "cpu-par")
    np.testing.assert_array_equal(got, np.cumsum(a))


@pytest.mark.parametrize(
    ("seg", "error", "match"),
    [
        (np.array([2, 2]), ValueError, "sum to 4"),
        (np.array([6, -1]), ValueError, ">= 0"),
        (np.array([[5]]), ValueError, "1-D"),
        (np.array([5.0]), TypeError, "integers"),
    ],
)
def test_bad_segment_descriptors_are_reported(seg: Any, error: type, match: str) -> None:
    a = np.arange(5, dtype=np.int64)
    with pytest.raises(error, match=match):
        compute(S.scanl1_seg(add, a, seg), "cpu-seq")


def test_user_mistakes_are_clear_errors() -> None:
    a = np.arange(5.0)
    with pytest.raises(ValueError, match="rank >= 1"):
        S.scanl1(add, np.float64(2.0))
    with pytest.raises(TypeMismatch, match="component"):
        S.scanl(add, (0.0, 1.0), a)
    with pytest.raises(TypeMismatch, match="returns 2 value"):
        compute(S.scanl1(lambda x, y: (x, y), a), "cpu-seq")
    with pytest.raises(TypeError, match="plain Python function"):
        compute(S.scanl1(np.arctan2, a), "cpu-seq")
    with pytest.raises(TypeMismatch, match="is a float"):
        S.scanl(add, 0.5, np.arange(3))
    with pytest.raises(ValueError, match="does not fit"):
        S.scanl(add, 300, np.arange(3, dtype=np.int8))


def test_deterministic_scans_give_the_same_bits_at_any_offset_and_run() -> None:
    rng = np.random.default_rng(11)
    n = 40_000
    buf = rng.standard_normal(n + 64).astype(np.float32)
    base = buf[:n].copy()
    for target in TARGETS:
        first = np.asarray(compute(S.scanl1(add, base), target))
        for off in (1, 3, 17, 64):
            moved = buf[off : off + n]
            moved[:] = base  # same values, another address (and alignment)
            again = np.asarray(compute(S.scanl1(add, moved), target))
            assert again.tobytes() == first.tobytes()
            buf[: n + 64] = rng.standard_normal(n + 64).astype(np.float32)


def test_cross_target_compute_p_equals_compute_s_bit_for_bit() -> None:
    a = np.random.default_rng(5).standard_normal((2, 33_000)).astype(np.float32)
    for form in ("scanl", "scanr1"):
        make = getattr(S, form)
        node = make(add, np.float32(0), a) if form == "scanl" else make(add, a)
        seq = np.asarray(compute(node, "cpu-seq", "cross_target"))
        par = np.asarray(compute(node, "cpu-par", "cross_target"))
        assert seq.tobytes() == par.tobytes()
        ref = ref_scan(add, None if form == "scanr1" else 0.0, [a], right=form == "scanr1")[0]
        np.testing.assert_allclose(seq, ref, rtol=1e-3, atol=1e-2)


def test_empty_and_single_element_rows() -> None:
    for a in (np.zeros((3, 0)), np.ones((0, 4)), np.array([2.5])):
        for form, (node, want) in _forms(a).items():
            got = _get(node, "cpu-par")
            for g, w in zip(got, want, strict=True):
                assert g.shape == w.shape, form
                np.testing.assert_array_equal(g, w)
