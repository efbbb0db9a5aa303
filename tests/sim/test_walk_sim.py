"""Walking kernels (``offload.ptx.passes.walk``: a thread computes neighbouring rows, or
planes) under the simulator: every copy of a thread at its own row, the last group shifted
back into the space (rows not a multiple of the group), fewer rows than a group (the plain
kernel), boundary tests on the row (groups where the rows part take the fallback), and
functions the walk must leave alone -- each exactly what one CPU thread gives."""

from __future__ import annotations

import numpy as np
import pytest

import offload as ol
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.plan import SIM_PLAN
from tests.corpus.walking import WalkCase, cases, cases3
from tests.ptx.variants import kernel_ir

pytestmark = pytest.mark.sim

WALK = SIM_PLAN.walk


def _same(got, want) -> None:
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want, strict=True):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.tobytes() == w.tobytes()


@pytest.mark.parametrize("shape", [(WALK + 4, 7), (2 * WALK, 5), (WALK, 3), (WALK - 1, 6), (1, 4)])
@pytest.mark.parametrize("case", cases(1, 1), ids=repr)
def test_compute_g_matches_compute_s_bit_for_bit(case: WalkCase, shape: tuple[int, int]):
    made = {c.name: c for c in cases(*shape)}[case.name]
    ir = run_pipeline(check_and_lower(made.fn, 2).ir, CompileOptions())
    walked = kernel_ir(ir, CompileOptions(), 32, simulator=True)
    assert walked.blocking == ((WALK, 1) if case.walks else ())
    _same(ol.compute_g(shape, made.fn), ol.compute_s(shape, made.fn))


@pytest.mark.parametrize(
    "shape", [(WALK + 4, 4, 5), (2 * WALK, 3, 6), (WALK, 5, 3), (WALK - 1, 4, 4), (WALK + 2, 1, 1)]
)
@pytest.mark.parametrize("case", cases3(1, 1, 1), ids=repr)
def test_rank_3_walks_its_planes_bit_for_bit(case: WalkCase, shape: tuple[int, int, int]):
    # The halo's first and last groups take the fallback; the others the checked walk.
    made = {c.name: c for c in cases3(*shape)}[case.name]
    ir = run_pipeline(check_and_lower(made.fn, 3).ir, CompileOptions())
    walked = kernel_ir(ir, CompileOptions(), 32, simulator=True)
    assert walked.blocking == ((WALK, 1, 1) if case.walks else ())
    _same(ol.compute_g(shape, made.fn), ol.compute_s(shape, made.fn))


def test_a_walking_kernel_writes_into_out_and_takes_a_dtype():
    made = cases(WALK + 2, 5)[0]
    out = np.full((WALK + 2, 5), np.nan, np.float64)
    ol.compute_g((WALK + 2, 5), made.fn, dtype=np.float64, out=out)
    want = ol.compute_s((WALK + 2, 5), made.fn, dtype=np.float64)
    assert out.tobytes() == want.tobytes()
