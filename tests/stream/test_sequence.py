"""``ol.stream.fold_seq``: a sequence of arrays folded item by item (the next item made on a
host thread while this one folds) and the partials folded in sequence order: equal to
``compute_s`` of the same fold over the items joined wherever the grouping cannot change
the bits (integers), and to the explicit item-by-item fold for floats; the same bits run
to run; tuple folds, ``each=``, empty sequences, errors from the sequence."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import offload as ol
from offload.stream import fold_seq

RNG = np.random.default_rng(11)
ITEMS = [RNG.integers(-1000, 1000, n) for n in (7, 1, 300, 64)]
FLOATS = [RNG.random(n) for n in (5, 1000, 33)]


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def square(v):
    return v * v


def min_max(a, b):
    return min(a[0], b[0]), max(a[1], b[1])


def twice(v):
    return v, v


def _cases(target):
    whole = np.concatenate(ITEMS)
    got = fold_seq(add, 0, iter(ITEMS), target=target)
    assert got.tobytes() == ol.compute_s(ol.fold_all(add, 0, whole)).tobytes()
    got = fold_seq(add, 0, ITEMS, each=lambda a: ol.map(square, a), target=target)
    assert got.tobytes() == ol.compute_s(ol.fold_all(add, 0, ol.map(square, whole))).tobytes()
    pairs = [(a, a[::-1].copy()) for a in ITEMS]
    got = fold_seq(add, 0, pairs, each=lambda t: ol.zip_with(mul, *t), target=target)
    want = sum(int(np.dot(a, b)) for a, b in pairs)
    assert int(got) == want and got.dtype == np.int64
    lo, hi = fold_seq(
        min_max, (10**9, -(10**9)), ITEMS, each=lambda a: ol.map(twice, a), target=target
    )
    assert (int(lo), int(hi)) == (int(whole.min()), int(whole.max()))


def _floats(target):
    got = fold_seq(add, 0.0, (x for x in FLOATS), target=target)
    parts = [ol.compute_s(ol.fold_all(add, 0.0, x)) for x in FLOATS]
    want = ol.compute_s(ol.fold1(add, np.stack(parts)))
    assert got.tobytes() == want.tobytes()
    again = fold_seq(add, 0.0, FLOATS, target=target)
    assert again.tobytes() == got.tobytes()


@pytest.mark.cpu
@pytest.mark.parametrize("target", ["s", "p"])
def test_fold_seq_on_the_cpu_targets(target):
    _cases(target)
    _floats(target)


@pytest.mark.sim
def test_fold_seq_on_the_simulator(monkeypatch):
    monkeypatch.setattr(ol.config, "gpu_simulator", True)
    _cases("g")


@pytest.mark.cpu
def test_an_empty_sequence_gives_z_and_a_bad_target_is_named():
    got = fold_seq(add, 0.0, [], target="s")
    assert got.shape == () and got.dtype == np.float64 and float(got) == 0.0
    with pytest.raises(ValueError, match="target"):
        fold_seq(add, 0, ITEMS, target="x")


@pytest.mark.cpu
def test_the_next_item_is_made_while_this_one_folds_and_errors_pass_through():
    made: list[str] = []

    def items():
        for k in range(3):
            made.append(threading.current_thread().name)
            yield ITEMS[k]
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        fold_seq(add, 0, items(), target="s")
    assert made and all(name.startswith("offload-seq") for name in made)
