"""``compute_p``'s one-pass scan (kernel ``fused``, ``scan_src.fused_kernel``): on a row of
at most ``CPU_CHUNK`` chunks the level runs either as the chunk tree on all threads or as
one pass on one thread, whichever its ``ThreadChoice`` measures faster; the two give the
same bits, for every scan form, tuples with a non-commuting combine, rows and segments."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from offload.acc import scan_job as SJ
from offload.cpu.threads import ThreadChoice

pytestmark = pytest.mark.cpu

RNG = np.random.default_rng(21)


def add(a, b):
    return a + b


def matmul2(a, b):
    return (
        a[0] * b[0] + a[1] * b[2],
        a[0] * b[1] + a[1] * b[3],
        a[2] * b[0] + a[3] * b[2],
        a[2] * b[1] + a[3] * b[3],
    )


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 16 and no one-chunk rule: a row of 17..256 elements has 2..16 chunks."""
    monkeypatch.setattr(SJ, "CPU_CHUNK", 16)
    monkeypatch.setattr(SJ, "CPU_SEQUENTIAL_BELOW", 0)


def computed(node, monkeypatch, threads):
    """``compute_p(node)`` with the level's choice forced (1: fused; else: the tree)."""
    with monkeypatch.context() as m:
        m.setattr(ThreadChoice, "pick", lambda self, n: 1 if threads == 1 else self.max_threads)
        out = ol.compute_p(node)
    return out if isinstance(out, tuple) else (out,)


def same_bits(a, b):
    for x, y in zip(a, b, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


X = RNG.standard_normal(200).astype(np.float32)
INTS = RNG.integers(-9, 9, (3, 150))
SEG = np.array([0, 37, 1, 90, 0, 72])
MATS = tuple((RNG.standard_normal(120) * 0.9).astype(np.float64) for _ in range(4))

NODES = {
    "scanl": lambda: ol.scanl(add, 0.5, X),
    "scanl1": lambda: ol.scanl1(add, X),
    "scanr": lambda: ol.scanr(add, -0.0, X),
    "scanr1": lambda: ol.scanr1(add, X),
    "scanl_total": lambda: ol.scanl_total(add, 0.0, X)[0],
    "rows int": lambda: ol.scanl1(add, INTS),
    "segments": lambda: ol.scanl_seg(add, 0.0, X, SEG),
    "matrices": lambda: ol.scanl1(matmul2, MATS),
}


@pytest.mark.parametrize("make", NODES.values(), ids=NODES.keys())
def test_the_one_pass_scan_has_the_trees_bits(make, small_chunks, monkeypatch):
    tree = computed(make(), monkeypatch, threads=2)
    fused = computed(make(), monkeypatch, threads=1)
    same_bits(fused, tree)
    seq = ol.compute_s(make())
    seq = seq if isinstance(seq, tuple) else (seq,)
    for f, s in zip(fused, seq, strict=True):  # (the data tells the two orders apart)
        np.testing.assert_allclose(
            np.asarray(f, np.float64), np.asarray(s, np.float64), rtol=1e-5, atol=1e-5
        )


def test_a_row_of_more_chunks_than_a_chunk_keeps_the_tree(small_chunks, monkeypatch):
    """17 x 16 elements: the row's level is the tree (its 18 totals then take either)."""
    x = RNG.standard_normal(17 * 16 + 3)
    launched = []
    real = SJ.ScanJob._two_ways

    def spy(self, module, arrays, flags, sizes):
        launched.append(sizes[1])
        return real(self, module, arrays, flags, sizes)

    monkeypatch.setattr(SJ.ScanJob, "_two_ways", spy)
    got = ol.compute_p(ol.scanl1(add, x))
    assert launched == [18]
    np.testing.assert_allclose(got, np.cumsum(x), rtol=1e-12)
