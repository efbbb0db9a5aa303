"""compute_g of scans, permute, filter and stencils under numba's CUDA simulator against
the interpreter's specification (``interp_collectives``; the user's functions on the IR
interpreter, the skeleton's documented algorithm in Python, as in the CPU lane's
``test_interp_*_cpu``), and under ``cross_target`` against compute_s and compute_p: one
set of bits (``interp_cases.same_bits``). The GPU's scan is the chunk tree of 32 (its
shared-memory kernels, the direct ones for bools, the one-block tail); its deterministic
permute folds each destination's group in source order (integer ``+``: native atomics,
exact). Small sizes: the simulator runs each thread as a Python thread.

    NUMBA_ENABLE_CUDASIM=1 OFFLOAD_GPU_SIMULATOR=1 python -m pytest -m sim tests/acc
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import offload as ol
from tests.acc.fold_reference import interpret
from tests.acc.interp_cases import (
    add,
    array,
    bitor,
    determinism,
    later,
    matmul2,
    max_first_nan,
    pair_add,
    same_bits,
)

pytestmark = [
    pytest.mark.sim,
    pytest.mark.skipif(
        not (os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and ol.config.gpu_simulator),
        reason="sim lane: NUMBA_ENABLE_CUDASIM=1 OFFLOAD_GPU_SIMULATOR=1 python -m pytest -m sim",
    ),
]

RNG = np.random.default_rng(61)
X = RNG.standard_normal((2, 70)).astype(np.float32)
MATS = tuple(RNG.uniform(-1.25, 1.25, 40) for _ in range(4))
PAIR = (RNG.standard_normal(45).astype(np.float32), RNG.integers(-99, 99, 45).astype(np.int16))
FLAGS = RNG.integers(0, 2, 50).astype(bool)
KEYS = RNG.integers(0, 5, 60)


def by_key(i: int) -> Any:
    return KEYS[i] if i % 7 else ol.IGNORE


def is_nan(x: Any) -> Any:
    return x != x  # noqa: PLR0124


def lap(get: Any) -> Any:
    return get(-1, 0) + get(2, 0) + get(0, -1) - 3 * get(0, 0)


def pairs(get: Any) -> Any:
    return (get(-1)[0] + get(2)[0], get(1)[1] * get(0)[1])


NODES = {
    "scanl1 float32": lambda: ol.scanl1(add, X),
    "scanr matmul2": lambda: ol.scanr(matmul2, (1.0, 0.0, 0.0, 1.0), MATS),
    "scanl_seg": lambda: ol.scanl_seg(add, 0.5, X, np.array([0, 33, 0, 37, 0])),
    "scanl1 bool": lambda: ol.scanl1(bitor, FLAGS),
    "scanr_total pair": lambda: ol.scanr_total(pair_add, (0.0, 0), PAIR)[0],
    "scanl1_seg max": lambda: ol.scanl1_seg(max_first_nan, X, np.array([70])),
    "permute later": lambda: ol.permute(later, np.zeros(5), by_key, X[0, :60].astype(np.float64)),
    "permute int add": lambda: ol.permute(add, np.zeros(5, np.int64), by_key, KEYS * 3),
    "permute pair": lambda: ol.permute(pair_add, (np.zeros(5, np.float32), np.zeros(5, np.int16)),
                                       by_key, (PAIR[0][:30].repeat(2), PAIR[1][:30].repeat(2))),
    "filter": lambda: ol.filter(is_nan, np.where(X[0] > 0.5, np.nan, X[0])),
    "stencil mirror": lambda: ol.stencil(lap, X[:, :9], "mirror"),
    "stencil pair": lambda: ol.stencil(pairs, PAIR, ol.constant((1.0, 2))),
}  # fmt: skip


@pytest.mark.parametrize("name", NODES)
def test_compute_g_equals_the_interpreter_and_cross_target_is_one_set_of_bits(name: str) -> None:
    node = NODES[name]()
    assert same_bits(ol.compute_g(node), interpret(node, like="gpu-sim"))
    spec = interpret(node, "cross_target")
    with determinism("cross_target"):
        assert same_bits(ol.compute_g(node), spec)
        assert same_bits(ol.compute_s(node), spec)
        assert same_bits(ol.compute_p(node), spec)


@settings(max_examples=6)
@given(data=st.data(), n=st.sampled_from([0, 1, 31, 32, 33, 65]), right=st.booleans())
def test_scans_of_any_length_in_the_simulator_equal_the_interpreter(
    data: st.DataObject, n: int, right: bool
) -> None:
    a = array(data, "float32", (n,))
    node = ol.scanr(add, 0.0, a) if right else ol.scanl1(add, a)
    assert same_bits(ol.compute_g(node), interpret(node, like="gpu-sim"))


def test_compute_g_gives_the_same_bits_at_every_offset_and_run() -> None:
    n = 100
    want = interpret(ol.scanl1(add, X[0]), like="gpu-sim")
    vals = X[0].astype(np.float64)
    pwant = interpret(ol.permute(later, np.zeros(5), by_key, vals[:60]), like="gpu-sim")
    buf = np.empty(n + 16, np.float32)
    pbuf = np.empty(n + 16)
    for off in (0, 1, 5, 0):
        moved = buf[off : off + 70]
        moved[...] = X[0]
        assert same_bits(ol.compute_g(ol.scanl1(add, moved)), want), off
        pmoved = pbuf[off : off + 60]
        pmoved[...] = vals[:60]
        assert same_bits(ol.compute_g(ol.permute(later, np.zeros(5), by_key, pmoved)), pwant)
