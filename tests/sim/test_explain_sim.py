"""``ol.explain(..., target="gpu")`` inside numba's CUDA simulator: the simulator replaces
numba-cuda's compiler, so there is no PTX; explain says so instead of failing as "a bug in
offload", and still shows the IR (collective graphs too)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import offload as ol

pytestmark = pytest.mark.sim

A = np.arange(8.0)


def twice(i):
    return A[i] * 2.0


def add(a, b):
    return a + b


def test_explain_of_an_element_function_says_there_is_no_ptx():
    text = ol.explain(twice, 8, target="gpu", file=io.StringIO())
    assert "no PTX under numba's CUDA simulator" in text
    assert "== IR after lowering" in text


def halved(v):
    return v * 0.5


def test_explain_of_a_collective_graph_runs_its_stages():
    x = np.arange(20_000, dtype=np.float32)
    node = ol.fold_all(add, 0.0, ol.map(halved, x))  # (a producer: an element stage first)
    text = ol.explain(node, target="gpu", file=io.StringIO())
    assert "collective graph: 2 kernel(s)" in text
    assert "no PTX under numba's CUDA simulator" in text and "fold tail" in text
    alone = ol.explain(ol.fold_all(add, 0.0, x), target="gpu", file=io.StringIO())
    assert "collective graph: 1 kernel(s)" in alone and "fold tail" in alone  # (an array)
