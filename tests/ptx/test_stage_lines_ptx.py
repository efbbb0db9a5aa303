"""Staged rank-1 kernels compile to PTX that reads its windows and shared values from
shared memory, and launch in lines of ``LINE`` threads (``offload.ptx.passes.stage``,
``offload.ptx.config.tiled_launch_config``)."""

from __future__ import annotations

import re

import pytest

from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.compile import compile_ptx
from offload.ptx.config import tiled_launch_config
from offload.ptx.kernel_source import build_kernel_source
from tests.corpus.staged_lines import convolution, nbody
from tests.ptx.variants import LINE, kernel_ir

pytestmark = pytest.mark.ptx

CC = (9, 0)


def _ptx(fn, options: CompileOptions, bits: int = 32) -> tuple[str, int | None]:
    ir = run_pipeline(check_and_lower(fn, 1).ir, options)
    ks = build_kernel_source(kernel_ir(ir, options, bits, simulator=False), index_bits=bits)
    return compile_ptx(ks, fn.__name__, CC), ks.tile


@pytest.mark.parametrize("bits", [32, 64])
def test_convolution_reads_two_windows_and_the_weights_from_shared_memory(bits):
    ptx, tile = _ptx(convolution(23, 19).fn, CompileOptions(), bits)
    assert tile == LINE
    # re's and im's windows of 2 x 256 floats, w's line of 256
    assert len(re.findall(rf"\.shared \.align 4 \.b8 \S+\[{2 * LINE * 4}\]", ptx)) == 2
    assert len(re.findall(rf"\.shared \.align 4 \.b8 \S+\[{LINE * 4}\]", ptx)) == 1
    assert len(re.findall(r"\bst\.shared\.f32", ptx)) == 5  # two per window, one for w
    assert len(re.findall(r"\bld\.shared\.f32", ptx)) >= 3
    assert len(re.findall(r"\bbar\.sync", ptx)) >= 2


def test_nbody_reads_the_bodies_from_shared_memory():
    ptx, tile = _ptx(nbody(21).fn, CompileOptions())
    assert tile == LINE
    assert len(re.findall(rf"\.shared \.align 4 \.b8 \S+\[{LINE * 4}\]", ptx)) == 3
    assert len(re.findall(r"\bld\.shared\.f32", ptx)) >= 3


@pytest.mark.parametrize(
    "options",
    [CompileOptions(bounds_check=True), CompileOptions(disabled_passes=frozenset({"stage"}))],
    ids=["bounds_check", "stage_disabled"],
)
def test_bounds_checks_and_disabling_the_pass_keep_the_plain_kernel(options):
    ptx, tile = _ptx(convolution(23, 19).fn, options)
    assert tile is None
    assert "bar.sync" not in ptx and ".shared" not in ptx


def test_a_line_launch_is_one_block_of_line_threads_per_line():
    cfg = tiled_launch_config((3_000_000,), LINE, num_regs=32, sm_count=132, shared_bytes=5120)
    assert cfg.block == (LINE, 1, 1)
    assert cfg.blocks_per_sm == 8  # 32 registers: 2048 threads
    assert cfg.grid == (min(-(-3_000_000 // LINE), 8 * 132 * 32), 1, 1)
    assert tiled_launch_config((300,), LINE, num_regs=32, sm_count=132).grid == (2, 1, 1)
