"""A kept tree's warm call (``replay.rerun``): the plan its last call ran, found on the
tree itself, with no scheduling or plan lookup -- and never where something it depends
on changed: the captured values' signature, the configuration, the tree's entry."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import offload as ol
from offload import replay
from offload.config import config
from offload.targets import SEQ
from tests.acc.test_replay import same_bits, scheduled

pytestmark = pytest.mark.cpu

HERE = sys.modules[__name__]
N = 3 * 8192 + 5
SCALE = 2.0


def add(a, b):
    return a + b


def scaled(v):
    return v * SCALE


@pytest.fixture
def full_path(monkeypatch):
    """Counts the calls that took the full path (``replay.compute``)."""
    seen = [0]
    real = replay.compute

    def counted(*args):
        seen[0] += 1
        return real(*args)

    monkeypatch.setattr(replay, "compute", counted)
    return seen


@pytest.mark.parametrize("compute", [ol.compute_s, ol.compute_p], ids=["s", "p"])
def test_a_kept_tree_reruns_its_plan_and_reads_its_inputs_again(compute, full_path):
    x = np.random.default_rng(1).random(N).astype(np.float32)
    node = ol.fold_all(add, 0.0, ol.map(scaled, x))
    compute(node)
    assert full_path[0] == 1
    for k in range(3):
        x[:] = k + 0.25  # (contents changed in place: the same signature)
        got = compute(node)
        same_bits(got, scheduled(compute, node))
    assert full_path[0] == 1  # every warm call by the remembered plan


def test_a_rebound_capture_a_setting_or_dtype_takes_the_full_path(monkeypatch, full_path):
    x = np.random.default_rng(2).random(N)
    node = ol.fold_all(add, 0.0, ol.map(scaled, x))
    first = ol.compute_s(node)
    monkeypatch.setattr(HERE, "SCALE", 3.0)  # (a captured number: another signature)
    rebound = ol.compute_s(node)
    assert full_path[0] == 2 and float(rebound) != float(first)
    same_bits(rebound, scheduled(ol.compute_s, node))
    monkeypatch.setattr(config, "determinism", "cross_target")  # (another configuration)
    same_bits(ol.compute_s(node), scheduled(ol.compute_s, node))
    assert full_path[0] == 3
    wide = ol.compute_s(node, dtype=np.float32)  # (dtype=: never by a remembered plan)
    assert full_path[0] == 4 and wide.dtype == np.float32


def test_targets_in_turn_each_give_their_own_result(full_path):
    x = np.arange(N, dtype=np.float64)
    node = ol.fold_all(add, 0.0, ol.map(scaled, x))
    want = float(scaled(x).sum())
    for compute in (ol.compute_s, ol.compute_p, ol.compute_s, ol.compute_p):
        assert float(compute(node)) == pytest.approx(want)
    assert full_path[0] == 4  # (each call found the other target's plan: the full path)
    assert float(ol.compute_p(node)) == pytest.approx(want) and full_path[0] == 4


def test_the_collectives_context_follows_the_configuration(monkeypatch):
    x = np.arange(N, dtype=np.float64)
    node = ol.fold_all(add, 0.0, x)
    ol.compute_s(node)
    first = SEQ.context
    assert first is not None and first.determinism == config.determinism
    ol.compute_s(ol.fold_all(add, 0.0, x))
    assert SEQ.context is first  # (unchanged configuration: the same context)
    monkeypatch.setattr(config, "determinism", "cross_target")
    same_bits(ol.compute_s(node), scheduled(ol.compute_s, node))
    assert SEQ.context is not first and SEQ.context.determinism == "cross_target"
    assert SEQ.context.options is config.compile_options()
