"""Handing a skeleton's working arrays back in the memory of the ``compute_*`` call.

Skeletons on the GPU work on CuPy device arrays. In the ``device`` memory mode those are
the result; in the ``unified`` mode (the default) a result is a NumPy array over managed
memory from the backend's own allocator, so it is copied there. CPU targets and the
simulator work on host arrays, which are already the result.
"""

from __future__ import annotations

from typing import Any

from offload.acc.base import Context


def deliver(ctx: Context, target: str, arr: Any) -> Any:
    """``arr`` (a working array of ``target``) as a result of the call ``ctx``."""
    if target != "gpu" or getattr(ctx.backend, "mode", "device") != "unified":
        return arr
    out = ctx.backend.allocate(tuple(arr.shape), [arr.dtype])[0]
    arr.get(out=out)
    return out
