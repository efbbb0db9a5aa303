"""The replay lane on the simulated GPU: the fold tail is a recorded step, so a warm
``fold_all`` runs its first stage and its tail from the plan, with the scheduled bits; a
combine function that captures values is scheduled on every call.

    NUMBA_ENABLE_CUDASIM=1 OFFLOAD_GPU_SIMULATOR=1 python -m pytest -m sim tests/acc
"""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from offload import driver, replay
from offload.acc.base import Context
from offload.acc.graph import compute as compute_graph
from offload.acc.permute import permute
from offload.acc.plan import FINAL, WIDE_CHUNK
from offload.config import config
from offload.targets import GPU
from tests.acc.sim_lane import needs_simulator

pytestmark = [pytest.mark.sim, needs_simulator]

N = FINAL * WIDE_CHUNK + 3
"""Two stages: the first as an element kernel, the second in the fold tail."""
RNG = np.random.default_rng(3)
OFFSET = 1.5


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def add_offset(a, b):
    return a + b + OFFSET * 0.0


def scheduled(node):
    options = config.compile_options()
    ctx = Context(GPU.resolve(options), options, config.determinism, run=driver.run)
    return compute_graph(ctx, node, None, None)


def host(a):
    return np.asarray(a.get() if hasattr(a, "get") else a)


@pytest.fixture
def plans_run(monkeypatch):
    seen = []
    real = replay.Plan.run

    def counted(self, values):
        seen.append(self)
        return real(self, values)

    monkeypatch.setattr(replay.Plan, "run", counted)
    return seen


def test_a_warm_dotp_replays_its_stage_and_tail_with_the_scheduled_bits(plans_run):
    for _ in range(3):
        x, y = (RNG.random(N, dtype=np.float32) for _ in range(2))
        node = ol.fold_all(add, 0.0, ol.zip_with(mul, x, y))
        got = host(ol.compute_g(node))
        assert got.tobytes() == host(scheduled(node)).tobytes()
    assert len(plans_run) == 2
    assert [type(s.fn).__name__ for s in plans_run[0].steps] == ["Launch", "_Tail"]


def test_a_combine_that_captures_values_is_scheduled_every_call(plans_run):
    for _ in range(2):
        x = RNG.random(N, dtype=np.float32)
        got = host(ol.compute_g(ol.fold_all(add_offset, 0.0, x)))
        assert got.tobytes() == host(scheduled(ol.fold_all(add_offset, 0.0, x))).tobytes()
    assert plans_run == []


BINS = np.arange(300) % 5


def bin_of(i):
    return BINS[i]


def test_a_permute_replays_with_its_captured_array_read_anew(plans_run, monkeypatch):
    for k in range(3):
        if k == 2:
            monkeypatch.setitem(globals(), "BINS", RNG.integers(0, 5, 300))
        x = RNG.random(300, dtype=np.float32)
        node = permute(add, np.zeros(5, np.float32), bin_of, x)
        got = host(ol.compute_g(node))
        assert got.tobytes() == host(scheduled(node)).tobytes()
        np.testing.assert_allclose(got, np.bincount(BINS, weights=x, minlength=5), rtol=1e-5)
    assert len(plans_run) == 2
