"""Scans, permute and filter on a real GPU (the gpu lane; skipped without one): the same
bits as compute_s in cross_target mode, the same bits run to run, and 64-bit offsets past
2^31 elements (cupy#9841); the default mode's one pass the same bits run to run."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload.acc import scan as S
from offload.acc.filter import filter as ofilter
from offload.acc.permute import IGNORE, permute
from offload.acc.skeletons.direct import compute
from tests.acc.sim_lane import needs_gpu
from tests.acc.skeleton_refs import add, later, matmul2, ref_permute, ref_scan

pytestmark = [pytest.mark.gpu, needs_gpu]


def double(v: Any) -> Any:
    return v + v


def _host(x: Any) -> np.ndarray[Any, Any]:
    return np.asarray(x.get()) if hasattr(x, "get") else np.asarray(x)


@pytest.mark.parametrize("n", [0, 1, 31, 33, 1025, 1 << 20, 3_000_017])
def test_gpu_scan_equals_compute_s_in_cross_target_mode(n: int) -> None:
    a = np.random.default_rng(n).standard_normal((2, n)).astype(np.float32)
    for form in ("scanl", "scanr1"):
        node = S.scanl(add, np.float32(0), a) if form == "scanl" else S.scanr1(add, a)
        gpu = _host(compute(node, "gpu", "cross_target"))
        seq = np.asarray(compute(node, "cpu-seq", "cross_target"))
        assert gpu.tobytes() == seq.tobytes()


@pytest.mark.parametrize("n", [8193, 1 << 22, 50_000_017])
def test_gpu_default_float_scan_gives_the_same_bits_run_to_run_and_at_any_address(n: int) -> None:
    # the default mode's one pass: tiles meet their predecessors' prefixes in whatever
    # order the GPU runs them, yet each prefix is the left fold of the tiles' totals
    import cupy as cp

    a = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    first = _host(compute(S.scanl1(add, a), "gpu"))
    np.testing.assert_allclose(first[-1], a.astype(np.float64).sum(), rtol=1e-3, atol=1e-2)
    for shift in (0, 1, 0, 3):
        moved = cp.empty(n + shift, np.float32)[shift:]
        moved[:] = cp.asarray(a)
        assert _host(compute(S.scanl1(add, moved), "gpu")).tobytes() == first.tobytes()
    right = _host(compute(S.scanr(add, np.float32(1), a), "gpu"))
    assert _host(compute(S.scanr(add, np.float32(1), a), "gpu")).tobytes() == right.tobytes()


def test_gpu_tuple_and_segmented_scans() -> None:
    rng = np.random.default_rng(2)
    comps = [rng.integers(-2, 3, 5000, dtype=np.int64) for _ in range(4)]
    got = compute(S.scanl1(matmul2, tuple(comps)), "gpu")
    for g, w in zip(got, ref_scan(matmul2, None, comps), strict=True):
        np.testing.assert_array_equal(_host(g), w)
    seg = np.array([0, 3, 4000, 0, 997])
    a = rng.integers(0, 9, 5000).astype(np.int32)
    want = np.asarray(compute(S.scanl_seg(add, 0, a, seg), "cpu-seq"))
    np.testing.assert_array_equal(_host(compute(S.scanl_seg(add, 0, a, seg), "gpu")), want)


def test_gpu_scan_past_two_to_the_31_elements() -> None:
    n = (1 << 31) + 1000
    a = np.ones(n, np.int8)  # int8 wraps: the exact reference is the index mod 256
    got = compute(S.scanl1(add, a), "gpu")
    tail = _host(got[-5:]).astype(np.int64)
    want = (np.arange(n - 5, n, dtype=np.int64) + 1) % 256
    want = np.where(want > 127, want - 256, want)
    np.testing.assert_array_equal(tail, want)


@pytest.mark.parametrize("n", [33, 8191, 8192, 1 << 20, 50_000_017])
def test_gpu_one_pass_integer_scans_are_exact(n: int) -> None:
    # integer components take the one-pass scan (a decoupled look-back across tiles, in
    # whatever order the GPU runs them): exact, so equal to cumsum with wrapping
    rng = np.random.default_rng(n)
    a = rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    want = np.cumsum(a, dtype=np.int32)
    for _ in range(2):
        np.testing.assert_array_equal(_host(compute(S.scanl1(add, a), "gpu")), want)
    m = rng.integers(-5, 5, (3, n // 3 + 1), dtype=np.int64)
    got = _host(compute(S.scanr(add, np.int64(7), m), "gpu"))
    np.testing.assert_array_equal(got, np.asarray(compute(S.scanr(add, np.int64(7), m))))


def test_gpu_fast_mode_float_scan() -> None:
    # small integers as float32: every partial sum of a range is exact (far below 2^24),
    # so any grouping the look-back finds gives the exact cumulative sums
    a = np.random.default_rng(8).integers(-4, 5, 10_000_019).astype(np.float32)
    got = _host(compute(S.scanl1(add, a), "gpu", "fast"))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.cumsum(a.astype(np.float64)).astype(np.float32))


@pytest.mark.parametrize("mode", ["deterministic", "cross_target", "fast"])
def test_gpu_permute(mode: str) -> None:
    rng = np.random.default_rng(4)
    keys = rng.integers(0, 50, 100_000)
    vals = rng.standard_normal(100_000)

    def ix(i: int) -> int:
        return keys[i] if i % 11 != 0 else IGNORE

    d = np.zeros(50)
    got = _host(compute(permute(later, d, ix, vals), "gpu", mode))
    if mode != "fast":
        assert got.tobytes() == ref_permute(later, d, ix, vals, IGNORE).tobytes()
    hist = _host(compute(permute(add, np.zeros(50, np.int64), ix, np.ones(100_000, np.int64)),
                         "gpu", mode))  # fmt: skip
    kept = keys[np.arange(100_000) % 11 != 0]
    np.testing.assert_array_equal(hist, np.bincount(kept, minlength=50))


def test_gpu_filter() -> None:
    a = np.random.default_rng(5).random(1_000_003)

    def small(x: Any) -> Any:
        return x < 0.3

    np.testing.assert_array_equal(_host(compute(ofilter(small, a), "gpu")), a[a < 0.3])


def test_gpu_kept_scan_replays_a_frozen_launch() -> None:
    # a kept node's warm calls run the replay lane's step, whose one-pass launch is frozen
    # after the first: later launches patch the new arrays' addresses alone
    import cupy as cp

    import offload as ol
    from offload.acc import scan_job as SJ

    frozen: list[Any] = []
    real = SJ.ScanJob._freeze

    def spy(self: Any, *args: Any) -> None:
        real(self, *args)
        frozen.append(self.frozen)

    saved = ol.config.memory
    ol.config.memory = "device"
    try:
        SJ.ScanJob._freeze = spy  # type: ignore[method-assign]
        x = cp.asarray(np.random.default_rng(1).standard_normal(3 * 8192 + 5).astype(np.float32))
        node = S.scanl1(add, x)
        for k in range(4):
            x[:] = cp.asarray(np.random.default_rng(k).standard_normal(x.size).astype(np.float32))
            got = _host(ol.compute_g(node))
            # (``dtype=`` never replays: the scheduled path, launched afresh)
            fresh = _host(ol.compute_g(S.scanl1(add, x), dtype=np.float32))
            assert got.tobytes() == fresh.tobytes()
        assert any(f for f in frozen)  # (a launch was frozen)
    finally:
        SJ.ScanJob._freeze = real  # type: ignore[method-assign]
        ol.config.memory = saved


@pytest.mark.parametrize("n", [0, 1000, 8192 * 7 + 3, 50_000_017])
def test_gpu_unified_scan_and_permute_write_managed_results_readable_at_once(n: int) -> None:
    # unified mode (the default): the kernels write the managed NumPy results in place;
    # the call returns only once they are written -- read here with no synchronise, a
    # missing one would show the previous call's values (the same block, recycled)
    import offload as ol

    saved = ol.config.memory
    ol.config.memory = "unified"
    try:
        for k in range(3):
            a = np.random.default_rng(k).integers(-9, 9, n).astype(np.int32)
            got = ol.compute_g(S.scanl(add, np.int32(k), a))
            assert type(got) is np.ndarray and got.shape == (n + 1,)
            want = np.concatenate([[k], k + np.cumsum(a, dtype=np.int32)]).astype(np.int32)
            np.testing.assert_array_equal(got, want)
            body, total = (ol.compute_g(x) for x in S.scanr_total(add, np.int32(0), a))
            assert type(body) is np.ndarray
            right = np.cumsum(a[::-1], dtype=np.int32)[::-1]  # (inclusive; the body excludes)
            np.testing.assert_array_equal(body, np.append(right[1:], np.int32(0))[:n])
            assert int(total) == int(a.sum(dtype=np.int32)) and body.shape == (n,)
            bins = np.zeros(7, np.int64) + k

            def ix(i: int) -> int:
                return a[i] % 7

            hist = ol.compute_g(permute(add, bins, ix, np.ones(n, np.int64)))
            assert type(hist) is np.ndarray
            np.testing.assert_array_equal(hist, k + np.bincount(a % 7, minlength=7))
            # a collective under an element node: computed in device memory (the call's
            # own array), the root's result managed
            twice = ol.compute_g(ol.map(double, S.scanl1(add, a)))
            assert type(twice) is np.ndarray
            np.testing.assert_array_equal(twice, 2 * np.cumsum(a, dtype=np.int32))
            m = n - n % 7
            folded = ol.compute_g(ol.map(double, ol.fold(add, np.int32(0), a[:m].reshape(7, -1))))
            assert type(folded) is np.ndarray
            np.testing.assert_array_equal(folded, 2 * a[:m].reshape(7, -1).sum(1, dtype=np.int32))
    finally:
        ol.config.memory = saved
