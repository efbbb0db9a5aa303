"""The GPU fold's tail kernel and the privatised atomic histogram kernel compile to PTX
without a GPU (numba-cuda's NVVM): barriers between the tail's stages; shared-memory
atomics, then one global atomic per entry, in the histogram."""

from __future__ import annotations

import re

import numpy as np
import pytest

from offload.acc.combine import compile_combine
from offload.acc.skeletons.atomic_src import shared_atomic_kernel
from offload.acc.skeletons.build import kernel_ptx
from offload.acc.skeletons.fold_src import fold_tail_kernel
from offload.acc.skeletons.scan_src import combine_wrapper
from tests.acc.skeleton_refs import add, matmul2

pytestmark = pytest.mark.ptx

F32, I64 = np.dtype(np.float32), np.dtype(np.int64)


def _tail_ptx(  # noqa: PLR0913
    f, dts, *, has_z: bool, strided: bool, from_global: bool = False, spread: bool = False
) -> str:
    sf = compile_combine(f, (dts, dts), "ol_comb", "test")
    src = "\n\n".join(
        [
            sf.source(gpu=True),
            combine_wrapper("ol_comb", dts, 0, flip=False, segmented=False),
            fold_tail_kernel(
                dts, 0, has_z=has_z, strided=strided, from_global=from_global, spread=spread
            ),
        ]
    )
    i = np.int64(0)
    lv = np.zeros(2, np.int64)
    xs = [np.zeros((2, 3), dt) for dt in dts]
    zs = [dt.type(0) for dt in dts] if has_z else []
    outs = [np.zeros(2, dt) for dt in dts]
    args = [i, i, i, i, lv, lv, lv, *xs, *zs, *outs]
    if spread:  # (the scratch rows and the counter)
        args += [*(np.zeros((2, 3), dt) for dt in dts), np.zeros(2, np.int32)]
    return kernel_ptx(src, ["ol_comb", "cmb"], "fold_tail", args)


def test_the_fold_tail_compiles_with_barriers_between_stages() -> None:
    ptx = _tail_ptx(add, (F32,), has_z=True, strided=True)
    assert re.search(r"\.entry\s+\S*fold_tail", ptx)
    assert "bar.sync" in ptx and "add.f32" in ptx
    # two shared buffers of 4096 float32 (40 KiB)
    assert re.search(r"\.shared\s+\.align\s+\d+\s+\.b8\s+\S+\[32768\]", ptx)


def test_the_fold_tail_of_a_tuple_without_a_neutral_element_compiles() -> None:
    ptx = _tail_ptx(matmul2, (I64,) * 4, has_z=False, strided=False)
    assert re.search(r"\.entry\s+\S*fold_tail", ptx) and "mul.lo.s64" in ptx


@pytest.mark.parametrize("strided", [True, False])
def test_a_tail_reading_its_first_stage_from_global_memory_compiles(strided) -> None:
    ptx = _tail_ptx(add, (F32,), has_z=True, strided=strided, from_global=True)
    assert re.search(r"\.entry\s+\S*fold_tail", ptx) and "ld.global" in ptx
    assert "bar.sync" in ptx


@pytest.mark.parametrize(
    ("f", "dts", "has_z", "strided"),
    [(add, (F32,), True, True), (add, (F32,), False, False), (matmul2, (I64,) * 4, False, False)],
    ids=["sum-strided", "fold1-contiguous", "tuple-no-z"],
)
def test_a_spread_first_stage_compiles_with_a_fence_and_an_atomic_counter(
    f, dts, has_z, strided
) -> None:
    ptx = _tail_ptx(f, dts, has_z=has_z, strided=strided, from_global=True, spread=True)
    assert re.search(r"\.entry\s+\S*fold_tail", ptx) and "bar.sync" in ptx
    assert "membar.gl" in ptx or "fence.sc.gpu" in ptx or "fence.acq_rel.gpu" in ptx
    assert re.search(r"\batom\.global\S*add", ptx) or re.search(r"\bred\.global", ptx)


@pytest.mark.parametrize(("op", "dt"), [("add", np.int32), ("max", np.int64), ("min", np.uint32)])
def test_the_privatised_histogram_uses_shared_then_global_atomics(op, dt) -> None:
    dt = np.dtype(dt)
    src = shared_atomic_kernel(op, dt, 256)
    i = np.int64(0)
    dst = np.zeros(3, np.int64)
    x = np.zeros(3, dt)
    ptx = kernel_ptx(src, [], "atomic_shared", [i, i, dst, x, np.zeros(256, dt)])
    atoms = re.findall(r"\b(?:atom|red)\.(shared|global)\S*", ptx)
    assert "shared" in atoms and "global" in atoms
    assert "bar.sync" in ptx
