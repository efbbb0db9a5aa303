"""The GPU's privatised permute (a histogram: ``permute`` with an integer ``+``, ``min`` or
``max`` into a small result) under the CUDA simulator: block-private copies in shared
memory give ``compute_s``'s bits, for results of any length up to the shared limit (and
the one-atomic-per-source kernel past it), ranks 1 and 2, ignored sources."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from offload.acc.permute import IGNORE, permute
from offload.acc.skeletons import atomic_src
from offload.acc.skeletons.direct import compute
from tests.acc.sim_lane import needs_simulator
from tests.acc.skeleton_refs import add

pytestmark = [pytest.mark.sim, needs_simulator]

N = 3000
KEYS = np.random.default_rng(3).integers(0, 1 << 30, N)
VALS = np.random.default_rng(4).integers(-50, 50, N)


def smaller(a: Any, b: Any) -> Any:
    return min(a, b)


def larger(a: Any, b: Any) -> Any:
    return max(a, b)


@pytest.fixture
def privatised(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The result lengths of every privatised kernel made."""
    made: list[int] = []
    real = atomic_src.shared_atomic_kernel

    def spy(op: str, dt: Any, cap: int) -> str:
        made.append(cap)
        return real(op, dt, cap)

    monkeypatch.setattr(atomic_src, "shared_atomic_kernel", spy)
    return made


def _binned(bins: int):
    def bin_of(i):
        k = KEYS[i] % (bins + 1)
        return IGNORE if k == bins else k

    return bin_of


@pytest.mark.parametrize("bins", [1, 7, 256, 300])
@pytest.mark.parametrize(("f", "dtype"), [(add, "int32"), (smaller, "int64"), (larger, "uint32")])
def test_small_results_are_privatised_with_compute_ss_bits(bins, f, dtype, privatised):
    a = (VALS % 40).astype(dtype) if dtype.startswith("u") else VALS.astype(dtype)
    defaults = np.full(bins, 3, dtype)
    node = permute(f, defaults, _binned(bins), a)
    got = compute(node, "gpu-sim", "deterministic")
    assert got.tobytes() == compute(node, "cpu-seq", "deterministic").tobytes()
    assert privatised == [atomic_src.capacity(bins)]


def test_a_result_too_large_for_shared_memory_takes_the_global_atomics(privatised):
    bins = atomic_src.MAX_SHARED_BYTES // 8 + 1
    defaults = np.zeros(bins, np.int64)
    node = permute(add, defaults, _binned(bins), VALS.astype(np.int64))
    got = compute(node, "gpu-sim", "deterministic")
    assert got.tobytes() == compute(node, "cpu-seq", "deterministic").tobytes()
    assert privatised == []


def test_a_rank_2_result(privatised):
    defaults = np.zeros((4, 5), np.int32)

    def cell(i):
        return (KEYS[i] % 4, KEYS[i] % 5)

    node = permute(add, defaults, cell, VALS.astype(np.int32))
    got = compute(node, "gpu-sim", "deterministic")
    assert got.tobytes() == compute(node, "cpu-seq", "deterministic").tobytes()
    assert privatised == [32]
