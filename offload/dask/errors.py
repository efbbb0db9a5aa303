"""The errors ``offload.dask`` raises about what it does not do."""

from __future__ import annotations

from offload.diagnostics import OffloadError


class DaskUnsupported(OffloadError):
    """A delayed tree holds something ``offload.dask.compute`` cannot compute on Dask
    arrays (the message names it and says what to do instead)."""

    rule = "dask-unsupported"
