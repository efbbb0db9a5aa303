"""Launch configuration from a kernel's resources."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offload.ptx.config import WAVES, choose_block_size, launch_config, resident_blocks

pytestmark = pytest.mark.unit
H100 = {"sm_count": 132, "regs_per_sm": 65536, "max_threads_per_sm": 2048}


def test_light_kernel_fills_the_sm():
    block, per_sm = choose_block_size(32, 1024, 65536, 2048)
    assert block * per_sm == 2048


def test_register_heavy_kernel_gets_fewer_resident_threads():
    block, per_sm = choose_block_size(128, 512, 65536, 2048)
    assert block * per_sm == 512  # 65536 regs / 128 per thread
    assert block <= 512


def test_driver_thread_limit_caps_the_block():
    block, _ = choose_block_size(255, 256, 65536, 2048)
    assert block <= 256


def test_resident_blocks_rounds_registers_to_the_allocation_unit():
    # 33 regs/thread -> 40 per thread after rounding a warp's 1056 to 1280.
    assert resident_blocks(256, 33, 65536, 2048) == 65536 // (1280 * 8)


def test_block_is_shaped_to_a_short_last_axis():
    cfg = launch_config((100_000, 3), num_regs=32, max_threads_per_block=1024, **H100)
    bx, by, _ = cfg.block
    assert bx == 32 and by > 1


def test_rows_beyond_the_grid_y_limit_are_covered_by_grid_stride():
    cfg = launch_config((2**33, 2), num_regs=32, max_threads_per_block=1024, **H100)
    assert cfg.grid[1] <= 65535
    assert cfg.grid[0] * cfg.grid[1] <= 132 * cfg.blocks_per_sm * WAVES


def test_rank_3_walks_rows_with_grid_y_and_planes_with_grid_z():
    cfg = launch_config((162, 258, 258), num_regs=32, max_threads_per_block=1024, **H100)
    assert cfg.grid[0] * cfg.block[0] >= 258  # one x pass covers a row
    assert cfg.grid[1] * cfg.block[1] >= 258  # one y pass covers a plane
    assert 1 < cfg.grid[2] <= 162
    assert math.prod(cfg.grid) <= 132 * cfg.blocks_per_sm * WAVES


def test_a_short_axis_gets_no_idle_threads_along_it():
    cfg = launch_config((4096, 1, 64), num_regs=32, max_threads_per_block=1024, **H100)
    assert cfg.block[1] == 1 and cfg.block[0] * cfg.block[2] == math.prod(cfg.block) >= 64
    one_row = launch_config((1, 64), num_regs=32, max_threads_per_block=1024, **H100)
    assert one_row.block == (64, 1, 1)


def test_planes_beyond_the_grid_z_limit_are_covered_by_grid_stride():
    cfg = launch_config((2**20, 1, 1, 40), num_regs=32, max_threads_per_block=1024, **H100)
    assert cfg.grid[2] <= 65535


@given(
    shape=st.lists(st.integers(1, 5000), min_size=1, max_size=4).map(tuple),
    regs=st.integers(8, 255),
)
def test_grid_is_at_most_waves_of_resident_blocks_and_never_empty(shape, regs):
    cfg = launch_config(shape, num_regs=regs, max_threads_per_block=1024, **H100)
    blocks = math.prod(cfg.grid)
    assert cfg.grid[1] <= 65535 and cfg.grid[2] <= 65535
    assert 1 <= blocks <= max(1, cfg.blocks_per_sm * 132 * WAVES)
    # never more threads along x than the last axis needs (rounded to a warp / a block)
    assert cfg.grid[0] * cfg.block[0] < shape[-1] + cfg.block[0]
    assert cfg.block[0] % 32 == 0 and math.prod(cfg.block) <= 1024
    rows = shape[-2] if len(shape) >= 2 else 1
    planes = math.prod(shape[:-2]) if len(shape) >= 3 else 1
    assert cfg.block[1] < 2 * rows and cfg.block[2] < 2 * planes and cfg.block[2] <= 64
