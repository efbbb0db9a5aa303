"""Handing a skeleton's working arrays back in the memory of the ``compute_*`` call.

Skeletons on the GPU work on CuPy device arrays. In the ``device`` memory mode those are
the result; in the ``unified`` mode (the default) a result is a NumPy array over managed
memory from the backend's own allocator, so it is copied there (device to device, then
synchronised: the host may read it at once). An input in managed memory is read in place
(``build.managed_view``). CPU targets and the simulator work on host arrays, which are
already the result.

A skeleton whose result is as large as its input (a scan, a permutation) writes it in
place instead: ``results`` gives fresh managed results and the CuPy views its kernels
write through, ``delivered`` synchronises once they are written -- one pass over the
result fewer than a copy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from offload.acc.base import Context
from offload.acc.skeletons.build import managed_view, view_over, xp_for


def deliver(ctx: Context, target: str, arr: Any) -> Any:
    """``arr`` (a working array of ``target``) as a result of the call ``ctx``."""
    return deliver_to(ctx.backend, target, arr)


def deliver_to(backend: Any, target: str, arr: Any) -> Any:
    """``arr`` (a working array of ``target``) as a result of a call on ``backend``."""
    if not _unified(backend, target) or isinstance(arr, np.ndarray):
        return arr  # (a NumPy array on the GPU target: a managed result from ``results``)
    out = backend.allocate(tuple(arr.shape), [arr.dtype])[0]
    view = managed_view(xp_for(target), out, prefetch=False)
    if view is not None:
        view[...] = arr  # a device-to-device copy into the managed result
        xp_for(target).cuda.get_current_stream().synchronize()
    else:
        arr.get(out=out)
    return out


def results(
    backend: Any, target: str, shape: tuple[int, ...], dtypes: Sequence[Any]
) -> tuple[list[Any], list[Any]]:
    """Fresh results of ``shape``, one per dtype, for a call on ``backend``, and the
    working arrays a skeleton writes them through: in the unified mode on the GPU, managed
    NumPy arrays and CuPy views of the same memory (``delivered`` then makes them the
    host's); elsewhere the target's own arrays (the same objects; ``deliver_to`` copies
    what still needs it, an empty result among them)."""
    xp = xp_for(target)
    if not _unified(backend, target) or math.prod(shape) == 0:
        outs = [xp.empty(shape, dt) for dt in dtypes]
        return outs, outs
    # (the pool's own blocks, prefetched: their addresses known, no driver query per array)
    fresh = backend.fresh(shape, list(dtypes))
    if fresh is None:  # (not managed memory: copied as ever)
        outs = [xp.empty(shape, dt) for dt in dtypes]
        return outs, outs
    made, ptrs = fresh
    return made, [view_over(xp, m, p) for m, p in zip(made, ptrs, strict=True)]


def delivered(backend: Any, target: str) -> None:
    """The results ``results`` made for a call on ``backend``, written by the kernels
    launched so far, readable by the host: the stream synchronised (unified mode)."""
    if _unified(backend, target):
        xp_for(target).cuda.get_current_stream().synchronize()


def _unified(backend: Any, target: str) -> bool:
    return target == "gpu" and getattr(backend, "mode", "device") == "unified"
