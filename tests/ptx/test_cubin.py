"""Cubins from nvJitLink (``offload.ptx.cubin``) and the GPU backend's use of them, on CI:
real PTX linked for a compute capability with no GPU, the driver played by the fake CuPy of
``test_launch_fastpath`` (which records whether it was handed a cubin or PTX)."""

from __future__ import annotations

import hashlib
import json
import logging
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from offload.options import CompileOptions
from offload.ptx import cubin as cubin_mod
from offload.ptx.backend import GPUBackend
from offload.ptx.compile import compile_ptx, tool_versions
from offload.ptx.cubin import cubin_arch, link_cubin, linker_version
from offload.ptx.inspect import GPUExplain
from tests.ptx import conftest
from tests.ptx.irfixtures import ratio_f32, saxpy_f32

pytestmark = pytest.mark.ptx


@pytest.fixture
def no_nvjitlink(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``from cuda.bindings import nvjitlink`` fails, as where the wheel is not installed."""
    import cuda.bindings

    monkeypatch.delattr(cuda.bindings, "nvjitlink", raising=False)
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvjitlink", None)
    monkeypatch.setattr(cubin_mod, "_NOTED", set())
    linker_version.cache_clear()
    yield
    linker_version.cache_clear()


def _compile(be: GPUBackend, make: Any = saxpy_f32) -> Any:
    """The loaded leading kernel of ``make()``."""
    return be.compile(make(), CompileOptions()).leading()


def _files(directory: Path, suffix: str) -> list[Path]:
    return sorted(directory.glob(f"*{suffix}"))


@pytest.mark.parametrize("cc", [(8, 0), (8, 6), (9, 0), (12, 0)], ids=lambda c: f"sm_{c[0]}{c[1]}")
def test_link_gives_an_elf_cubin_for_exactly_the_compute_capability(cc):
    ks = conftest.kernel("saxpy")
    ptx = conftest.ptx("saxpy") if cc == (9, 0) else compile_ptx(ks, "saxpy", cc)
    image = link_cubin(ptx, cc)
    assert image is not None and image[:4] == b"\x7fELF"
    assert cubin_arch(image) == cc
    assert ks.name.encode() in image  # the kernel's entry is in its symbol table
    from cuda.core import ObjectCode

    assert ObjectCode.from_cubin(image).code_type == "cubin"


def _header(abi_version: int, flags: int, machine: int = 190) -> bytes:
    head = bytearray(64)
    head[:9] = b"\x7fELF\x02\x01\x01\x41" + bytes([abi_version])
    struct.pack_into("<H", head, 18, machine)
    struct.pack_into("<I", head, 48, flags)
    return bytes(head)


@pytest.mark.unit
def test_cubin_arch_reads_the_sm_from_both_elf_abi_layouts_and_refuses_other_images():
    assert cubin_arch(_header(8, 0x6005A04)) == (9, 0)  # CUDA 13: bits 8-15
    assert cubin_arch(_header(8, 0x6007802)) == (12, 0)
    assert cubin_arch(_header(7, 0x5A055A)) == (9, 0)  # CUDA 12: bits 0-7
    assert cubin_arch(_header(7, 0x560556)) == (8, 6)
    assert cubin_arch(_header(8, 0x6005A04, machine=62)) is None  # an x86-64 ELF
    assert cubin_arch(b"//ptx\n.version 9.5" + bytes(64)) is None
    assert cubin_arch(_header(8, 0x6005A04)[:40]) is None


def test_key_depends_on_the_linker_that_makes_the_cubin():
    assert dict(tool_versions())["nvjitlink"] == (linker_version() or "none")
    assert linker_version() is not None  # installed with numba-cuda[cu13] (the dev extra)


def test_compiled_kernel_gets_a_cubin_for_the_device_and_loads_it(fake_cupy, tmp_path):
    _, state = fake_cupy
    be = GPUBackend(cache_dir=tmp_path)
    kernel = _compile(be)
    assert kernel.image == "cubin" and kernel.cubin_error is None
    assert state["images"] == ["cubin"]  # in process too: no driver JIT on first use
    [cubin] = _files(tmp_path, ".cubin")
    assert cubin_arch(cubin.read_bytes()) == (9, 0)
    meta = json.loads(cubin.with_suffix(".json").read_text())
    assert meta["cubin_sha256"] == hashlib.sha256(cubin.read_bytes()).hexdigest()
    assert be.cache.stats.cubin_loads == 1 and be.cache.stats.ptx_loads == 0


def test_fresh_backend_loads_the_cached_cubin_without_compiling(fake_cupy, tmp_path, monkeypatch):
    _, state = fake_cupy
    _compile(GPUBackend(cache_dir=tmp_path))
    from offload.ptx import backend as backend_mod

    def refuse(*args: Any) -> None:
        raise AssertionError("a cached kernel was compiled or linked again")

    monkeypatch.setattr(backend_mod, "compile_ptx", refuse)
    monkeypatch.setattr(backend_mod, "link_cubin", refuse)
    be = GPUBackend(cache_dir=tmp_path)
    assert _compile(be).image == "cubin"
    assert be.cache.stats.disk_hits == 1 and be.cache.stats.misses == 0
    assert state["images"] == ["cubin", "cubin"]


def test_damaged_cubin_on_disk_is_relinked_and_the_kernel_loads_the_new_one(fake_cupy, tmp_path):
    _compile(GPUBackend(cache_dir=tmp_path))
    [path] = _files(tmp_path, ".cubin")
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])
    be = GPUBackend(cache_dir=tmp_path)
    assert _compile(be).image == "cubin"
    assert be.cache.stats.bad_cubins == 1 and be.cache.stats.misses == 0
    assert path.read_bytes() == good  # nvJitLink makes the same bytes of the same PTX


def test_driver_refusing_the_cubin_loads_the_ptx_and_links_no_more(fake_cupy, tmp_path):
    cp, state = fake_cupy
    real = cp.cuda.function.Module

    class RefusingModule(real):  # a driver older than the nvJitLink that made the cubin
        def load(self, image: bytes) -> None:
            if image.startswith(b"\x7fELF"):
                raise RuntimeError("CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid")
            super().load(image)

    cp.cuda.function.Module = RefusingModule
    be = GPUBackend(cache_dir=tmp_path)
    kernel = _compile(be)
    assert kernel.image == "ptx" and "CUDA_ERROR_INVALID_IMAGE" in (kernel.cubin_error or "")
    assert state["images"] == ["ptx"] and not be.cubins
    second = _compile(be, ratio_f32)
    assert second.image == "ptx" and second.cubin_error is None  # not even tried
    assert len(_files(tmp_path, ".json")) == 2 and len(_files(tmp_path, ".cubin")) == 1
    assert be.cache.stats.ptx_loads == 2 and be.cache.stats.cubin_loads == 0


def test_missing_nvjitlink_caches_and_loads_ptx_with_one_debug_note(
    fake_cupy, tmp_path, no_nvjitlink, caplog
):
    _, state = fake_cupy
    caplog.set_level(logging.DEBUG, logger="offload.ptx.cubin")
    assert linker_version() is None
    assert link_cubin(conftest.ptx("saxpy"), (9, 0)) is None
    be = GPUBackend(cache_dir=tmp_path)
    assert _compile(be).image == "ptx" and _compile(be, ratio_f32).image == "ptx"
    assert state["images"] == ["ptx", "ptx"]
    assert _files(tmp_path, ".cubin") == [] and len(_files(tmp_path, ".json")) == 2
    notes = [r for r in caplog.records if "nvJitLink is not available" in r.getMessage()]
    assert len(notes) == 1 and notes[0].levelno == logging.DEBUG


def test_failed_link_gives_no_cubin_and_one_debug_note(monkeypatch, caplog):
    from cuda.bindings import nvjitlink

    def fail(handle: int) -> None:
        raise nvjitlink.nvJitLinkError(nvjitlink.Result.ERROR_PTX_COMPILE)

    monkeypatch.setattr(nvjitlink, "complete", fail)
    monkeypatch.setattr(cubin_mod, "_NOTED", set())
    caplog.set_level(logging.DEBUG, logger="offload.ptx.cubin")
    for _ in range(2):
        assert link_cubin(conftest.ptx("saxpy"), (9, 0)) is None
    notes = [r for r in caplog.records if "could not link" in r.getMessage()]
    assert len(notes) == 1 and "ERROR_PTX_COMPILE" in notes[0].getMessage()


@pytest.mark.unit
@pytest.mark.parametrize("image", ["cubin", "ptx"])
def test_explain_says_which_image_the_driver_loaded(image):
    text = GPUExplain("k", "src", "ptx text", {"num_regs": 8}, "device", image=image).render()
    assert f"== loaded from {image} (" in text
    assert "loaded from" not in GPUExplain("k", "src", "ptx text").render()
