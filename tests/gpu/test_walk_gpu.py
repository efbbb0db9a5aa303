"""Walking kernels (``offload.ptx.passes.walk``: a thread computes neighbouring rows) on the
GPU: at sizes its guard admits (enough rows and threads to fill the SMs), rows that are not
a multiple of the group, every case of ``tests/corpus/walking`` exactly what one CPU thread
gives; the plain kernel below the threshold."""

from __future__ import annotations

import io

import numpy as np
import pytest

import offload as ol
from tests.corpus.walking import cases, cases3

pytestmark = pytest.mark.gpu


def _same(got, want) -> None:
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want, strict=True):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.tobytes() == w.tobytes()


@pytest.mark.parametrize("shape", [(2051, 1031), (1024, 4097), (7, 300)])
@pytest.mark.parametrize("name", [c.name for c in cases(1, 1)])
def test_compute_g_matches_compute_s_bit_for_bit(name: str, shape: tuple[int, int]):
    case = {c.name: c for c in cases(*shape)}[name]
    _same(ol.compute_g(shape, case.fn), ol.compute_s(shape, case.fn))


def test_explain_names_the_walking_kernel():
    case = cases(2048, 2048)[0]
    text = ol.explain(case.fn, (2048, 2048), target="gpu", file=io.StringIO())
    assert "walk4" in text


@pytest.mark.parametrize("shape", [(162, 258, 258), (37, 130, 67), (3, 64, 64)])
@pytest.mark.parametrize("name", [c.name for c in cases3(1, 1, 1)])
def test_rank_3_matches_compute_s_bit_for_bit(name: str, shape: tuple[int, int, int]):
    case = {c.name: c for c in cases3(*shape)}[name]
    _same(ol.compute_g(shape, case.fn), ol.compute_s(shape, case.fn))


def test_explain_names_the_walking_rank_3_kernel():
    case = cases3(160, 256, 256)[0]
    text = ol.explain(case.fn, (160, 256, 256), target="gpu", file=io.StringIO())
    assert "walk4" in text
