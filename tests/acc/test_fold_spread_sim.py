"""The fold tail's spread first stage (``fold_src``'s ``spread``, ``fold_tail.spread_slab``)
under numba's CUDA simulator: a block a slab of partials, the last block to count its row
finishing it. The partials and their order are the staged tree's, so the bits equal the
interpreter running that tree (and ``compute_s`` under ``cross_target``), for strided
(commuting) and contiguous trees, with and without a neutral element, several rows,
tuples; and the counter is zero again after each launch (a second call gives the same).

    NUMBA_ENABLE_CUDASIM=1 OFFLOAD_GPU_SIMULATOR=1 python -m pytest -m sim tests/acc
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import offload as ol
from offload.acc import fold_tail
from offload.acc.skeletons import workspace
from tests.acc.fold_reference import interpret, same_bits
from tests.acc.sim_lane import GPU_SIMULATOR_LANE

pytestmark = GPU_SIMULATOR_LANE


def add(a: Any, b: Any) -> Any:
    return a + b


def max_first_nan(a: Any, b: Any) -> Any:
    return b if a == a and (b > a or b != b) else a  # does not commute: contiguous runs


@pytest.fixture
def spread_seen(monkeypatch: Any) -> list[int]:
    seen: list[int] = []
    real = fold_tail.spread_slab

    def spy(*args: Any) -> int:
        g = real(*args)
        seen.append(g)
        return g

    monkeypatch.setattr(fold_tail, "spread_slab", spy)
    return seen


@pytest.mark.parametrize(
    ("shape", "which"),
    [
        ((65536,), "sum"),
        ((70000,), "sum"),  # (1,094 first-stage partials: more than a block's threads)
        ((3, 9001), "sum"),
        ((2, 20000), "fold1 max"),
        ((2, 30000), "float64"),
    ],
)
def test_a_spread_first_stage_has_the_staged_trees_bits(
    shape: tuple[int, ...], which: str, spread_seen: list[int]
) -> None:
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    if which == "sum":
        node = ol.fold_all(add, 0.0, x) if len(shape) == 1 else ol.fold(add, 0.0, x)
    elif which == "fold1 max":
        x[0, 777] = np.nan
        node = ol.fold1(max_first_nan, x)
    else:
        node = ol.fold(add, 0.0, x.astype(np.float64))
    got = ol.compute_g(node)
    assert any(g > 0 for g in spread_seen)  # (the spread kernel ran)
    assert same_bits(got, interpret(node, "cross_target"))  # (the wide tree)
    assert same_bits(ol.compute_g(node), got)  # (the counters were reset)
    _, _, count = workspace.scratch("gpu-sim", int(np.prod(shape[:-1])), 1, [np.float32])
    assert not count.any()


def test_cross_target_spread_equals_compute_s() -> None:
    x = np.random.default_rng(3).standard_normal(65536).astype(np.float32)
    saved = ol.config.determinism
    try:
        ol.config.determinism = "cross_target"
        node = ol.fold_all(add, 0.0, x)
        assert same_bits(ol.compute_g(node), ol.compute_s(node))
    finally:
        ol.config.determinism = saved
