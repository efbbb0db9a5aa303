"""The GPU skeletons compile to PTX without a GPU (numba-cuda's NVVM): scans with 64-bit
work counters and offsets, permute's native atomics and compare-and-swap loop."""

from __future__ import annotations

import re

import numpy as np
import pytest

from offload.acc.combine import compile_combine, compile_index_function
from offload.acc.scan_job import ScanJob
from offload.acc.skeletons.build import kernel_ptx
from offload.acc.skeletons.permute_src import (
    atomic_cas_kernel,
    atomic_native_kernel,
    bit_functions,
    combine_new_old,
    dests_kernel,
    groups_kernel,
)
from tests.acc.skeleton_refs import add, later, matmul2

pytestmark = pytest.mark.ptx

F32, I64 = np.dtype(np.float32), np.dtype(np.int64)


def _entry(ptx: str, name: str) -> str:
    assert re.search(rf"\.entry\s+\S*{name}", ptx), f"no .entry for {name}"
    return ptx


@pytest.mark.parametrize("kernel", ["totals", "rescan"])
def test_scan_kernels_compile_with_64_bit_offsets(kernel: str) -> None:
    sf = compile_combine(add, ((F32,), (F32,)), "ol_comb", "test")
    src = ScanJob("gpu", "deterministic", sf, (F32,), []).source()
    x = np.zeros((2, 3), np.float32)
    i = np.int64(0)
    args = [i, i, i, i, i, i, x, np.float32(0), x] + ([x] if kernel == "rescan" else [])
    ptx = _entry(kernel_ptx(src, ["ol_comb", "cmb"], kernel, args), kernel)
    # the work counter and the element offsets are 64-bit: past 2^31 elements stays right
    assert re.search(r"mul\.(lo|wide)\.[su]64", ptx) or "mad.lo.s64" in ptx
    assert "add.f32" in ptx


@pytest.mark.parametrize("kernel", ["totals", "rescan"])
def test_staged_scan_kernels_use_shared_memory_and_barriers(kernel: str) -> None:
    sf = compile_combine(add, ((F32,), (F32,)), "ol_comb", "test")
    job = ScanJob("gpu", "deterministic", sf, (F32,), [])
    tb = job.staged_threads()
    assert tb == 256  # 256 threads x 33 float32 fit the 48 KiB of static shared memory
    x = np.zeros((2, 3), np.float32)
    i = np.int64(0)
    args = [i, i, i, i, i, i, x, np.float32(0), x] + ([x] if kernel == "rescan" else [])
    ptx = _entry(kernel_ptx(job.source(tb), ["ol_comb", "cmb"], kernel, args), kernel)
    assert re.search(r"\.shared\s+\.align\s+\d+\s+\.b8\s+\S+\[33792\]", ptx)
    assert "bar.sync" in ptx


def test_tuple_scan_kernel_compiles() -> None:
    sf = compile_combine(matmul2, ((I64,) * 4, (I64,) * 4), "ol_comb", "test")
    src = ScanJob("gpu", "deterministic", sf, (I64,) * 4, [], right=True).source()
    x = np.zeros((2, 3), np.int64)
    i = np.int64(0)
    args = [i] * 6 + [x] * 4 + [i] * 4 + [x] * 4
    _entry(kernel_ptx(src, ["ol_comb", "cmb"], "totals", args), "totals")


@pytest.mark.parametrize(
    ("dts", "f", "mode"),
    [((I64,), add, "deterministic"), ((F32,), add, "fast"), ((I64,) * 4, matmul2, "cross_target")],
)
def test_one_pass_scan_kernel_compiles_with_its_look_back(dts: tuple, f: object, mode: str) -> None:
    sf = compile_combine(f, (dts, dts), "ol_comb", "test")
    job = ScanJob("gpu", mode, sf, dts, [])
    tb = job.onepass_threads()
    assert tb is not None
    src = job.onepass_module_source(tb)
    x = np.zeros((2, 3), dts[0])
    i, st = np.int64(0), np.zeros(4, np.int32)
    m = len(dts)
    args = (
        [i] * 8
        + [x] * m
        + [dts[0].type(0)] * m
        + [x] * m
        + [st, st]
        + [np.zeros(4, dts[0])] * 3 * m  # (totals, prefixes, the seed)
    )
    ptx = _entry(kernel_ptx(src, ["ol_comb", "cmb"], "onepass", args), "onepass")
    assert "bar.sync" in ptx
    assert "bar.warp.sync" in ptx  # (the first scan of chunk totals: warp-synchronous)
    assert "vote.sync.ballot" in ptx  # (the look-back's newest prefix, by a warp vote)
    assert re.search(r"atom\.global\.(add|max)\.[su]32", ptx)  # the tile counter, the status
    assert "membar.gl" in ptx or "fence.sc.gpu" in ptx or "fence.acq_rel.gpu" in ptx


def test_permute_native_atomic_add_compiles_to_atom_add() -> None:
    src = atomic_native_kernel("gpu", "add")
    dst, x = np.zeros(4, np.int64), np.zeros(4, np.float32)
    ptx = kernel_ptx(src, [], "atomic_native", [np.int64(0), dst, x, x])
    assert re.search(r"(atom|red)\.global\.add\.f32", ptx)


@pytest.mark.parametrize(("dtype", "bits"), [(np.float64, "b64"), (np.float32, "b32")])
def test_permute_cas_loop_compiles_for_floats(dtype: type, bits: str) -> None:
    dt = np.dtype(dtype)
    sf = compile_combine(later, ((dt,), (dt,)), "ol_comb", "test")
    bits_src, extra = bit_functions(dt, simulator=False)
    src = "\n\n".join(
        [sf.source(True), combine_new_old("ol_comb", (dt,), 0), bits_src,
         atomic_cas_kernel("gpu", 0)]
    )  # fmt: skip
    src = "\n".join(f"{k} = cuda.libdevice.{v.__name__}" for k, v in extra.items()) + "\n" + src
    dst, x = np.zeros(4, np.int64), np.zeros(4, dt)
    ints = x.view(f"i{dt.itemsize}")
    ptx = kernel_ptx(src, ["ol_comb", "cmb", "to_bits", "from_bits"], "atomic_cas",
                     [np.int64(0), dst, x, x, ints])  # fmt: skip
    assert re.search(rf"atom\.global\.cas\.{bits}", ptx)


def test_permute_destinations_and_groups_compile() -> None:
    data = np.zeros(8, np.int64)

    def ix(i: int) -> tuple[int, int]:
        return (data[i], i % 3)

    ixf = compile_index_function(ix, 1, "ixf", "test")
    src = ixf.source(True) + "\n\n" + dests_kernel("gpu", 1, 2, 1)
    dst, err = np.zeros(4, np.int64), np.zeros(3, np.int64)
    i = np.int64(0)
    ptx = kernel_ptx(src, ["ixf"], "dests", [i, i, i, i, dst, err, data])
    assert re.search(r"atom\.global\.cas\.b64", ptx)  # the fault record's one winner
    sf = compile_combine(later, ((F32,), (F32,)), "ol_comb", "test")
    src = "\n\n".join([sf.source(True), combine_new_old("ol_comb", (F32,), 0),
                       groups_kernel("gpu", 1, 0)])  # fmt: skip
    x = np.zeros(4, np.float32)
    _entry(kernel_ptx(src, ["ol_comb", "cmb"], "groups", [i, dst, dst, x, x]), "groups")


def test_one_block_tail_kernel_compiles() -> None:
    from offload.acc.skeletons.scan_gpu_src import tail_kernel

    sf = compile_combine(add, ((F32,), (F32,)), "ol_comb", "test")
    job = ScanJob("gpu", "deterministic", sf, (F32,), [])
    src = job.source() + "\n\n" + tail_kernel(1, 0, 32)
    x, flat, ints = np.zeros((2, 3), np.float32), np.zeros(4, np.float32), np.zeros(3, np.int64)
    i = np.int64(0)
    ptx = kernel_ptx(src, ["ol_comb", "cmb"], "tail", [i, i, i, ints, ints, x, x, flat, flat])
    assert "bar.sync" in _entry(ptx, "tail")
