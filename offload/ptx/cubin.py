"""PTX -> cubin with nvJitLink, so that a process loading a cached kernel skips the CUDA
driver's PTX JIT.

``cuModuleLoadData`` of PTX runs ptxas inside the driver in every fresh process (tens of
milliseconds per kernel); a cubin (SASS for one compute capability, an ELF image) loads
as it is. nvJitLink needs no GPU: the cubin is made at compile time, beside the PTX, and
the kernel cache keeps both (``offload.ptx.cache``).

The link does what the driver's JIT does to the same PTX: ptxas at its highest level
(``-O3``, the level the driver's default ``CU_JIT_OPTIMIZATION_LEVEL`` of 4 selects), no
debug information or line tables; fast-math and FMA contraction were settled by NVVM and
are in the PTX already.

Nothing here is ever an error for the user. Without nvJitLink (an install without the
``nvidia-nvjitlink`` wheel or a CUDA toolkit) or where a link fails, ``link_cubin`` gives
``None`` and the kernel is cached and loaded as PTX; each such reason is noted once per
process at debug level on the ``offload.ptx.cubin`` logger. A cubin the driver refuses
(one made by an nvJitLink newer than the driver) is the loader's to catch
(``offload.ptx.launch.GPUKernel``): it loads the PTX instead.
"""

from __future__ import annotations

import functools
import logging
import struct

__all__ = ["LINK_OPTIONS", "cubin_arch", "link_cubin", "linker_version", "note_once"]

LINK_OPTIONS = ("-O3",)
"""nvJitLink options besides ``-arch``: ptxas's default level, as the driver JIT uses."""

_EM_CUDA = 190
"""``e_machine`` of a CUDA ELF image."""
_LOG = logging.getLogger(__name__)
_NOTED: set[str] = set()
"""The fallback reasons already noted in this process (a record of notes, not an option)."""


def note_once(reason: str, message: str) -> None:
    """Log ``message`` at debug level, the first time ``reason`` comes up in this process."""
    if reason not in _NOTED:
        _NOTED.add(reason)
        _LOG.debug("offload: %s", message)


@functools.cache
def linker_version() -> str | None:
    """nvJitLink's version (``"13.5"``), or ``None`` where it cannot be loaded. Part of
    every GPU cache key (``offload.ptx.compile.tool_versions``): a cubin made by one
    linker is never loaded where another would link."""
    try:
        from cuda.bindings import nvjitlink

        major, minor = nvjitlink.version()
    except Exception as exc:  # ImportError, or the library not found or not loadable
        note_once(
            "no-nvjitlink",
            f"nvJitLink is not available ({type(exc).__name__}: {exc}); GPU kernels are "
            "cached as PTX only (the driver JIT-compiles them in every process)",
        )
        return None
    return f"{major}.{minor}"


def link_cubin(ptx: str, cc: tuple[int, int]) -> bytes | None:
    """The cubin of ``ptx`` for compute capability ``cc``, or ``None`` where nvJitLink is
    missing or the link fails (then the kernel runs from its PTX, as before)."""
    if linker_version() is None:
        return None
    from cuda.bindings import nvjitlink

    options = [f"-arch=sm_{cc[0]}{cc[1]}", *LINK_OPTIONS]
    handle = None
    try:
        handle = nvjitlink.create(len(options), options)
        data = ptx.encode()
        nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "offload")
        nvjitlink.complete(handle)
        image = bytearray(nvjitlink.get_linked_cubin_size(handle))
        nvjitlink.get_linked_cubin(handle, image)
    except Exception as exc:
        note_once(
            "link-failed",
            f"nvJitLink could not link a kernel for sm_{cc[0]}{cc[1]} "
            f"({type(exc).__name__}: {exc}); it is cached as PTX only",
        )
        return None
    finally:
        if handle is not None:
            nvjitlink.destroy(handle)
    if cubin_arch(bytes(image)) != cc:
        note_once("link-odd", f"nvJitLink's output is not a cubin for sm_{cc[0]}{cc[1]}")
        return None
    return bytes(image)


def cubin_arch(image: bytes) -> tuple[int, int] | None:
    """The compute capability a cubin's ELF header names, or ``None`` where ``image`` is not
    a 64-bit little-endian CUDA ELF image.

    The SM number is in ``e_flags``: bits 8-15 from ELF ABI version 8 (CUDA 13's
    linkers), bits 0-7 before."""
    if len(image) < 64 or image[:4] != b"\x7fELF" or image[4] != 2 or image[5] != 1:
        return None
    (machine,) = struct.unpack_from("<H", image, 18)
    (flags,) = struct.unpack_from("<I", image, 48)
    if machine != _EM_CUDA:
        return None
    sm = (flags >> 8) & 0xFF if image[8] >= 8 else flags & 0xFF
    return (sm // 10, sm % 10) if sm else None
