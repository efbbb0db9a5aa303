"""The size sweep's sizes and ratios (``python -m offload bench --sweep N``)."""

from __future__ import annotations

import dataclasses

import pytest

from benchmarks import sweep
from benchmarks.suite import ALL

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", list(ALL))
def test_sweep_runs_from_quick_to_paper_in_growing_sizes(name: str) -> None:
    sizes = ALL[name].sizes
    got = sweep.sweep_params(sizes, 5)
    assert got[-1] == dataclasses.replace(sizes["paper"], **_iters(sizes["quick"]))
    assert got[0] == sizes["quick"]
    assert len(got) == len(set(got)) >= 2
    labels = [sweep.label(p) for p in got]
    assert len(set(labels)) == len(labels)


def _iters(p: object) -> dict[str, int]:
    return {"iters": p.iters} if hasattr(p, "iters") else {}  # type: ignore[attr-defined]


def test_ratios_are_over_the_best_gpu_peer_and_compute_p() -> None:
    rec = {
        "configs": [
            {"config": "compute_g", "status": "ok", "per_iter_s": 3e-6, "kind": "target"},
            {"config": "compute_p", "status": "ok", "per_iter_s": 6e-6, "kind": "target"},
            {"config": "cuda", "status": "ok", "per_iter_s": 2e-6, "kind": "peer", "on_gpu": True},
            {"config": "cupy", "status": "ok", "per_iter_s": 4e-6, "kind": "peer", "on_gpu": True},
            {"config": "jax", "status": "error", "kind": "peer", "on_gpu": True},
        ]
    }
    got = sweep.ratios(rec)
    assert got["compute_g/peer"] == pytest.approx(1.5)
    assert got["compute_g/p"] == pytest.approx(0.5)
    assert got["best peer us"] == pytest.approx(2.0)
    rec["size_label"] = "n=1"
    rec["name"] = "x"
    assert "| x | n=1 | 1.5 | 0.5 | 2 |" in sweep.markdown([rec])
