"""Handing a skeleton's working arrays back in the memory of the ``compute_*`` call.

Skeletons on the GPU work on CuPy device arrays. In the ``device`` memory mode those are
the result; in the ``unified`` mode (the default) a result is a NumPy array over managed
memory from the backend's own allocator, so it is copied there (device to device, then
synchronised: the host may read it at once). An input in managed memory is read in place
(``build.managed_view``). CPU targets and the simulator work on host arrays, which are
already the result.
"""

from __future__ import annotations

from typing import Any

from offload.acc.base import Context
from offload.acc.skeletons.build import managed_view, xp_for


def deliver(ctx: Context, target: str, arr: Any) -> Any:
    """``arr`` (a working array of ``target``) as a result of the call ``ctx``."""
    return deliver_to(ctx.backend, target, arr)


def deliver_to(backend: Any, target: str, arr: Any) -> Any:
    """``arr`` (a working array of ``target``) as a result of a call on ``backend``."""
    if target != "gpu" or getattr(backend, "mode", "device") != "unified":
        return arr
    out = backend.allocate(tuple(arr.shape), [arr.dtype])[0]
    view = managed_view(xp_for(target), out, prefetch=False)
    if view is not None:
        view[...] = arr  # a device-to-device copy into the managed result
        xp_for(target).cuda.get_current_stream().synchronize()
    else:
        arr.get(out=out)
    return out
