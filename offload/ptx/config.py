"""Launch configuration from a compiled kernel's resources (pure functions, unit-tested).

The kernel walks the index space with grid-stride loops: the x dimension of the grid walks
the last (contiguous) axis of the result, the y dimension the axis before it, the z
dimension the leading axes (flattened). So any shape is covered by any grid; the grid only
has to fill the machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

WARP = 32
MAX_GRID_Y = 65535
MAX_GRID_Z = 65535
MAX_BLOCK_Z = 64
REG_ALLOC_UNIT = 256
"""Registers are allocated per warp in units of 256 (sm_70 .. sm_90)."""
MAX_BLOCKS_PER_SM = 32
WAVES = 32
"""Most waves of resident blocks a launch asks for. One wave with long grid-stride loops
leaves each thread's loads serialised (latency-bound: 55% of the DRAM roofline on
blackscholes, H100 run 1); CUB-style several waves keep more independent loads in flight,
and the grid-stride loop still covers any size beyond them."""


@dataclass(frozen=True)
class LaunchConfig:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    blocks_per_sm: int
    """Resident blocks per SM the block size allows (register- and thread-limited)."""
    occupancy: float
    """Resident threads per SM / the SM's maximum."""


def resident_blocks(
    block: int, num_regs: int, regs_per_sm: int, max_threads_per_sm: int, shared_bytes: int = 0
) -> int:
    """How many blocks of ``block`` threads fit on one SM at once."""
    warps = -(-block // WARP)
    regs_per_warp = -(-max(num_regs, 1) * WARP // REG_ALLOC_UNIT) * REG_ALLOC_UNIT
    by_regs = regs_per_sm // (regs_per_warp * warps)
    by_threads = max_threads_per_sm // (warps * WARP)
    by_shared = (228 << 10) // shared_bytes if shared_bytes else MAX_BLOCKS_PER_SM
    return max(0, min(by_regs, by_threads, by_shared, MAX_BLOCKS_PER_SM))


def choose_block_size(
    num_regs: int, max_threads_per_block: int, regs_per_sm: int, max_threads_per_sm: int
) -> tuple[int, int]:
    """(threads per block, resident blocks per SM) maximising resident threads; on a tie
    the smaller block (more blocks: better tail behaviour and latency hiding)."""
    limit = max(WARP, max_threads_per_block // WARP * WARP)
    best = (0, 0, 0)  # (resident threads, -block, blocks)
    for block in (128, 256, 512, 1024, limit):
        if block > limit:
            continue
        blocks = resident_blocks(block, num_regs, regs_per_sm, max_threads_per_sm)
        cand = (blocks * block, -block, blocks)
        best = max(best, cand)
    if best[0] == 0:  # nothing fits by our model: trust the driver's per-kernel limit
        return limit, 1
    return -best[1], best[2]


def launch_config(
    shape: tuple[int, ...],
    *,
    num_regs: int,
    max_threads_per_block: int,
    sm_count: int,
    regs_per_sm: int = 65536,
    max_threads_per_sm: int = 2048,
) -> LaunchConfig:
    """Block and grid for ``shape``: a block shaped to the last axis (at least a warp
    wide, so loads along it coalesce), and at most ``WAVES`` waves of resident blocks, the
    grid's y and z filled after x (rows, then planes)."""
    block, per_sm = choose_block_size(
        num_regs, max_threads_per_block, regs_per_sm, max_threads_per_sm
    )
    last = shape[-1] if shape else 1
    rows = shape[-2] if len(shape) >= 2 else 1
    planes = math.prod(shape[:-2]) if len(shape) >= 3 else 1
    bx = min(block, max(WARP, _pow2(last)))
    # The rest of the block along y, then z, never wider than the axis (rounded up to a
    # power of two): threads past a short axis would idle (a (4096, 1, 64) index space
    # gets 64 x 1 x 2 blocks, not 64 x 2 x 1).
    by = max(1, min(block // bx, _pow2(rows)))
    bz = max(1, min(block // (bx * by), _pow2(planes), MAX_BLOCK_Z))
    target = max(1, per_sm * sm_count * WAVES)
    gx = max(1, min(-(-last // bx), target))
    gy = max(1, min(-(-rows // by), max(1, target // gx), MAX_GRID_Y))
    gz = max(1, min(-(-planes // bz), max(1, target // (gx * gy)), MAX_GRID_Z))
    occupancy = per_sm * block / max_threads_per_sm
    return LaunchConfig((gx, gy, gz), (bx, by, bz), per_sm, min(1.0, occupancy))


def walked(shape: tuple[int, ...], blocking: tuple[int, ...]) -> tuple[int, ...]:
    """The index space a kernel's threads cover: ``shape`` itself, or for a walking kernel
    (``offload.ptx.passes.walk``: ``blocking[0]`` indices of axis 0 a thread, untiled) its
    groups along axis 0 by the other axes."""
    if not blocking or len(shape) not in (2, 3):
        return shape
    return (-(-shape[0] // blocking[0]), *shape[1:])


def _pow2(n: int) -> int:
    """The smallest power of two at least ``n`` (1 for ``n <= 1``)."""
    return 1 << max(0, (n - 1).bit_length())


MAX_GRID_X = 2**31 - 1


def tile_count(shape: tuple[int, ...], tile: int, blocking: tuple[int, ...] = ()) -> int:
    """How many ``tile`` x ``tile`` thread tiles cover a rank-2 ``shape`` (lines of ``tile``
    threads a rank-1 one); a tile of a blocked kernel (``offload.opt.jam``) covers
    ``tile * blocking[a]`` elements along ``a``."""
    f = blocking or (1,) * len(shape)
    return math.prod(-(-n // (tile * fa)) for n, fa in zip(shape, f, strict=True))


def tile_block(shape: tuple[int, ...], tile: int) -> tuple[int, int, int]:
    """The thread block of a tiled kernel: ``tile`` x ``tile`` (rank 2) or ``tile`` (rank 1)."""
    return (tile, tile, 1) if len(shape) == 2 else (tile, 1, 1)


def tiled_launch_config(
    shape: tuple[int, ...],
    tile: int,
    *,
    blocking: tuple[int, ...] = (),
    num_regs: int,
    sm_count: int,
    shared_bytes: int = 0,
    regs_per_sm: int = 65536,
    max_threads_per_sm: int = 2048,
) -> LaunchConfig:
    """Block and grid of a kernel that runs in ``tile`` x ``tile`` thread tiles
    (``offload.opt.stage``; lines of ``tile`` threads for a rank-1 ``shape``): one block per
    tile, a 1-D grid that walks the tiles of ``shape`` with a block-stride loop, at most
    ``WAVES`` waves of resident blocks. A tile of a blocked kernel (``offload.opt.jam``)
    covers ``tile * blocking[a]`` elements along axis ``a``."""
    dims = tile_block(shape, tile)
    block = math.prod(dims)
    per_sm = resident_blocks(block, num_regs, regs_per_sm, max_threads_per_sm, shared_bytes)
    tiles = tile_count(shape, tile, blocking)
    target = max(1, per_sm * sm_count * WAVES)
    grid = max(1, min(tiles, target, MAX_GRID_X))
    occupancy = per_sm * block / max_threads_per_sm
    return LaunchConfig((grid, 1, 1), dims, per_sm, min(1.0, occupancy))
