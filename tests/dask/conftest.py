"""The Dask tests' shared fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def cluster_client():
    """A ``distributed.LocalCluster`` of two one-thread worker processes (one per test
    module). ``":0"``: any free port for the scheduler's HTTP server (the default 8787 may
    be held by another cluster of a parallel test run: a warning, an error under
    ``-W error``)."""
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client
