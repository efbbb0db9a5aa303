"""Staged kernels compile to PTX with shared-memory tiles and barriers, and launch in
square thread tiles (``offload.ptx.passes.stage``, ``offload.ptx.config.tiled_launch_config``)."""

from __future__ import annotations

import re

import pytest

from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.compile import compile_ptx
from offload.ptx.config import tiled_launch_config
from offload.ptx.kernel_source import build_kernel_source
from tests.corpus.staged import matmul
from tests.ptx.variants import TILE, kernel_ir

pytestmark = pytest.mark.ptx

CC = (9, 0)


def _ptx(options: CompileOptions, bits: int = 32) -> tuple[str, int | None]:
    fn = matmul(5, 7, 37).fn
    ir = run_pipeline(check_and_lower(fn, 2).ir, options)
    ks = build_kernel_source(
        kernel_ir(ir, options, bits, simulator=False),
        bounds_check=options.bounds_check,
        index_bits=bits,
    )
    return compile_ptx(ks, "dot", CC), ks.tile


@pytest.mark.parametrize("bits", [32, 64])
def test_matmul_kernel_reads_its_operands_from_shared_tiles(bits):
    ptx, tile = _ptx(CompileOptions(disabled_passes=frozenset({"jam"})), bits)
    assert tile == TILE
    # eight slots of 16 x 17 floats (a padded row: no bank conflicts down a column)
    assert re.search(r"\.shared \.align 4 \.b8 \S+\[1088\]", ptx), ptx[:2000]
    assert len(re.findall(r"\.shared \.align 4 \.b8", ptx)) == 8
    assert len(re.findall(r"\bst\.shared\.f32", ptx)) >= 8
    assert len(re.findall(r"\bld\.shared\.f32", ptx)) >= 8
    assert len(re.findall(r"\bbar\.sync", ptx)) >= 2


@pytest.mark.parametrize("bits", [32, 64])
def test_blocked_matmul_kernel_stages_every_copys_reads_and_keeps_64_sums(bits):
    ptx, tile = _ptx(CompileOptions(), bits)
    assert tile == TILE
    # the rolled loop (reroll) x (8 row + 8 column copies): 16 slots of 16 x 17 floats
    assert len(re.findall(r"\.shared \.align 4 \.b8 \S+\[1088\]", ptx)) == 16
    # per staged iteration: 16 shared reads feed 64 multiply-adds (not 128 reads)
    assert len(re.findall(r"\bld\.shared\.f32", ptx)) == 16
    assert len(re.findall(r"\bmul\.rn\.f32", ptx)) >= 64
    # 64 results, each stored under its own inside test
    assert len(re.findall(r"\bst\.global\.f32", ptx)) == 64
    assert ".local" not in ptx  # the 64 sums live in registers


@pytest.mark.parametrize(
    "options",
    [CompileOptions(bounds_check=True), CompileOptions(disabled_passes=frozenset({"stage"}))],
    ids=["bounds_check", "stage_disabled"],
)
def test_bounds_checks_and_disabling_the_pass_keep_the_plain_kernel(options):
    ptx, tile = _ptx(options)
    assert tile is None
    assert "bar.sync" not in ptx and ".shared" not in ptx


def test_tiled_launch_is_one_square_block_per_tile_and_at_most_the_waves():
    cfg = tiled_launch_config((2048, 2048), 16, num_regs=40, sm_count=132, shared_bytes=8704)
    assert cfg.block == (16, 16, 1)
    assert cfg.blocks_per_sm == 6  # 40 registers: 6 blocks of 256 threads
    assert cfg.grid == (min(128 * 128, 6 * 132 * 32), 1, 1)
    small = tiled_launch_config((5, 7), 16, num_regs=40, sm_count=132)
    assert small.grid == (1, 1, 1)
    by_shared = tiled_launch_config((64, 64), 16, num_regs=16, sm_count=1, shared_bytes=100_000)
    assert by_shared.blocks_per_sm == 2


def test_a_blocked_tile_covers_its_factors_of_elements():
    cfg = tiled_launch_config((2048, 2048), 16, blocking=(4, 4), num_regs=80, sm_count=132)
    assert cfg.block == (16, 16, 1)
    assert cfg.grid == (32 * 32, 1, 1)  # 64 x 64 elements per tile
    edge = tiled_launch_config((65, 20), 16, blocking=(4, 2), num_regs=80, sm_count=132)
    assert edge.grid == (2 * 1, 1, 1)
