"""Split stencils (``Stencil.lower_element``: an interior arm without boundary rules, a
border arm with them) on a real GPU (the gpu lane; skipped without one): the same bits
as compute_s in both memory modes, for arrays with and without an interior, every
boundary, ranks 1-3."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import offload as ol
from tests.acc.fold_reference import same_bits
from tests.acc.sim_lane import needs_gpu
from tests.acc.test_stencil_split_cpu import BOUNDARIES, CASES, _boundary

pytestmark = [pytest.mark.gpu, needs_gpu]


@pytest.fixture(params=["unified", "device"])
def memory(request: Any) -> Any:
    saved = ol.config.memory
    ol.config.memory = request.param
    yield request.param
    ol.config.memory = saved


def _host(x: Any) -> Any:
    return x.get() if hasattr(x, "get") else x


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_split_stencils_on_the_gpu_equal_compute_s(boundary: str, memory: str) -> None:
    rng = np.random.default_rng(7)
    for fn, shapes in CASES:
        for shape in [*shapes, tuple(67 + 3 * k for k in range(len(shapes[0])))]:
            a = rng.standard_normal(shape).astype(np.float32)
            node = ol.stencil(fn, a, _boundary(boundary))
            assert same_bits(_host(ol.compute_g(node)), ol.compute_s(node)), (fn, shape)
