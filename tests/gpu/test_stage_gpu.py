"""Staged kernels (``offload.opt.stage``) on the GPU: 16 x 16 thread tiles, shared memory
and barriers give exactly what one CPU thread gives, at sizes with many tiles and chunks."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from tests.corpus.staged import CASES, StagedCase, matmul

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(
    "case", [*CASES, matmul(300, 333, 517), matmul(17, 2049, 64), matmul(1000, 3, 250)], ids=repr
)
def test_compute_g_matches_compute_s_bit_for_bit(case: StagedCase):
    got = ol.compute_g(case.shape, case.fn)
    want = ol.compute_s(case.shape, case.fn)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(g), w)
