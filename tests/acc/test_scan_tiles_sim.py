"""The GPU scan's whole-tile path (a one-row forward scan without a neutral element, every
element of the tile present: loads and stores unrolled) gives the bits of the general
path: ``compute_s`` under ``cross_target`` runs the same chunk tree. Sizes with whole
tiles only, whole tiles and a partial one, and less than one tile.

    NUMBA_ENABLE_CUDASIM=1 OFFLOAD_GPU_SIMULATOR=1 python -m pytest -m sim tests/acc
"""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from offload.acc.scan import scanl, scanl1, scanr1
from offload.acc.scan_job import GPU_CHUNK
from offload.acc.skeletons.build import SIM_THREADS
from tests.acc.sim_lane import GPU_SIMULATOR_LANE, cross_target_s

pytestmark = GPU_SIMULATOR_LANE

TILE = SIM_THREADS * GPU_CHUNK
"""Elements of a staged tile in the simulator (32 threads x 32)."""


def add(a, b):
    return a + b


@pytest.mark.parametrize("n", [3 * TILE, 3 * TILE + 5, TILE - 1])
@pytest.mark.parametrize("make", [scanl1, scanr1, lambda f, x: scanl(f, 0.0, x)])
def test_whole_tiles_give_the_general_paths_bits(n, make, monkeypatch):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    node = make(add, x)
    monkeypatch.setattr(ol.config, "determinism", "cross_target")  # (floats: the chunk tree)
    got = ol.compute_g(node)
    want = cross_target_s(node)
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
