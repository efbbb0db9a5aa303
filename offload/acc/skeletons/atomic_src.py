"""The GPU's privatised atomic permute: each block combines into its own copy of a small
result in shared memory, then folds that copy into the result with one atomic per entry.

A histogram (``permute`` with ``+`` into a few hundred bins) sends millions of sources to
the same few addresses: one global atomic per source serialises in the L2 (18 ms for
2^26 sources into 256 bins on an H200, against ``cupy.bincount``'s 2 ms). Shared-memory
atomics contend only within a block, and the global result sees ``blocks x bins``
atomics in all. Used for the native atomics (``add``/``min``/``max``) on a result of at
most ``MAX_SHARED_BYTES``; integer ``add``, ``min`` and ``max`` are exact in any order,
so the bits are those of the one-atomic-per-source kernel (floats take this path only in
``fast`` mode, which promises no order).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from offload.acc.skeletons.build import dtype_ctor

Dt = np.dtype[Any]

MAX_SHARED_BYTES = 16 * 1024
"""The largest result a block keeps a private copy of (bytes of shared memory)."""
ITEMS_PER_THREAD = 16
"""Sources a thread combines (at least) before its block flushes: blocks = items / (threads
x this), at most ``MAX_BLOCKS``."""
MAX_BLOCKS = 1024
"""Most blocks of a privatised launch (about eight resident blocks per SM on an H100)."""


def fits(dt: Dt, entries: int) -> bool:
    """Whether a result of ``entries`` elements of ``dt`` is privatised."""
    return 0 < capacity(entries) * dt.itemsize <= MAX_SHARED_BYTES


def capacity(entries: int) -> int:
    """The private copy's length: a power of two (one kernel serves every result length
    up to it)."""
    return 1 << max(0, entries - 1).bit_length()


def blocks_for(items: int, threads: int) -> int:
    return max(1, min(MAX_BLOCKS, -(-items // (threads * ITEMS_PER_THREAD))))


def neutral_text(op: str, dt: Dt) -> str:
    """The private copy's starting value: the op's neutral element in ``dt``."""
    ctor = dtype_ctor(dt)
    if op == "add":
        return f"{ctor}(0)"
    if dt.kind not in "iu":
        raise ValueError(f"privatised {op} on {dt}: only add is native for floats")
    info = np.iinfo(dt)
    return f"{ctor}({info.max if op == 'min' else info.min})"


def shared_atomic_kernel(op: str, dt: Dt, cap: int) -> str:
    """``atomic_shared(items, D, dst, x0, o0)``: sources ``x0[s]`` combined with
    ``cuda.atomic.<op>`` into a block-private copy of the ``D`` (at most ``cap``) results,
    folded into ``o0`` at the end (entries still neutral are skipped). A grid-stride loop
    over the sources; every thread reaches both ``syncthreads``."""
    z = neutral_text(op, dt)
    return (
        "\n".join(
            [
                "def atomic_shared(items, D, dst, x0, o0):",
                f"    sm = cuda.shared.array({cap}, np.{dt.name})",
                "    tid = np.int64(cuda.threadIdx.x)",
                "    nt = np.int64(cuda.blockDim.x)",
                "    j = tid",
                "    while j < D:",
                f"        sm[j] = {z}",
                "        j += nt",
                "    cuda.syncthreads()",
                "    s = np.int64(cuda.blockIdx.x) * nt + tid",
                "    stride = np.int64(cuda.gridDim.x) * nt",
                "    while s < items:",
                "        d = dst[s]",
                "        if d >= 0:",
                f"            cuda.atomic.{op}(sm, d, x0[s])",
                "        s += stride",
                "    cuda.syncthreads()",
                "    j = tid",
                "    while j < D:",
                "        v = sm[j]",
                f"        if v != {z}:",
                f"            cuda.atomic.{op}(o0, j, v)",
                "        j += nt",
            ]
        )
        + "\n"
    )
