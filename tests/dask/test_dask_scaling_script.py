"""benchmarks/lab/dask_scaling.py runs on a CPU LocalCluster (as CI can) and its checks
hold: the map equals Dask's own bit for bit, the fold is deterministic and close to
Dask's."""

from __future__ import annotations

import pytest

pytest.importorskip("distributed")

pytestmark = pytest.mark.cpu


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_dask_scaling_runs_on_a_cpu_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.lab import dask_scaling

    argv = ["--cpu", "--workers", "1", "--per-worker-mib", "4", "--chunk-mib", "1", "--reps", "1"]
    assert dask_scaling.main(argv) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].endswith("ok")
