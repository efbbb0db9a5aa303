"""Compile time grows near-linearly with the size of the function (issue 19: a chain of
``//`` by a constant was exponential): checking, lowering and the common pipeline on
functions of 100 and 1000 lines, for each shape in ``tests/opt/scaling.py``. The 1000-line
sizes are a few seconds each, so CI runs the 300-line ones and the big ones run with
``OFFLOAD_SCALING_FULL=1`` (and in ``tools/compile_scaling.py``). A cpu-lane test times
numba's compile of a chain of ``//`` too (the emitted code, not offload's passes, was
exponential there)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.opt.scaling import SHAPES, ir_seconds, load

FULL = os.environ.get("OFFLOAD_SCALING_FULL") == "1"
SIZES = {  # shape -> (small, big) line counts, 10x apart
    "divmod-chain": (100, 1000) if FULL else (30, 300),
    "float-chain": (100, 1000) if FULL else (30, 300),
    "elif-ladder": (30, 300) if FULL else (20, 200),
    # range facts once per unroll/licm pass, not once per loop, and no fact copied into
    # blocks that cannot ask for it: 12 -> 120 lines was 86x, now about 12x
    "nested-loops": (30, 300) if FULL else (12, 120),
}


@pytest.mark.unit
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_pipeline_time_grows_near_linearly_with_function_size(shape: str, tmp_path: Path) -> None:
    n_small, n_big = SIZES[shape]
    small_fn, big_fn = load(shape, n_small, tmp_path), load(shape, n_big, tmp_path)
    ir_seconds(load(shape, 10, tmp_path))  # warm the imports
    small = min(ir_seconds(small_fn) for _ in range(2))
    big = min(ir_seconds(big_fn) for _ in range(2))
    # 10x the lines: linear is 10x; allow 40x for noise and n log n passes.
    assert big < 40 * small + 1.0, (
        f"{shape}: {n_small} lines {small:.3f} s, {n_big} lines {big:.3f} s"
    )


@pytest.mark.cpu
def test_numba_compile_time_of_a_chain_of_floor_divisions_grows_near_linearly(
    tmp_path: Path,
) -> None:
    # Each signed // by a constant was three branch diamonds for numba and LLVM: a chain of
    # 24 compiled in 8.7 s, of 30 in 78 s. Branch-free now (offload/emit/division.py).
    import offload as ol

    ol.compute_s(2, load("divmod-chain", 2, tmp_path))  # numba's start-up
    seconds = []
    for n in (8, 32):
        fn = load("divmod-chain", n, tmp_path)
        t0 = time.perf_counter()
        ol.compute_s(3, fn)
        seconds.append(time.perf_counter() - t0)
    small, big = seconds
    # 4x the lines: linear is 4x; allow 12x (exponential growth was over 50x)
    assert big < 12 * small + 1.0, f"8 lines {small:.2f} s, 32 lines {big:.2f} s"
