"""Runtime symbols LLVM-generated CPU code may call but numba's JIT does not provide.

LLVM lowers some loop trip counts (a ``while`` whose step is only known at run time, inside
another loop) to 128-bit divisions that call compiler-rt's ``__udivti3`` family. numba
0.67-0.68 (llvmlite 0.49-0.50) leaves those symbols unresolved, so the kernel jumps to
address 0 and the process dies with a segmentation fault. We resolve them from the C
runtime's libgcc_s, which every glibc system has loaded.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

INT128_HELPERS = ("__udivti3", "__umodti3", "__divti3", "__modti3")


@functools.cache
def ensure_int128_helpers() -> tuple[str, ...]:
    """Register the 128-bit division helpers with llvmlite once; returns those added."""
    import llvmlite.binding as llvm

    missing = [name for name in INT128_HELPERS if not llvm.address_of_symbol(name)]
    if not missing:
        return ()
    path = ctypes.util.find_library("gcc_s") or "libgcc_s.so.1"
    try:
        lib = ctypes.CDLL(path)
    except OSError:  # no libgcc_s (not glibc): nothing we can resolve them from
        return ()
    added: list[str] = []
    for name in missing:
        fn = getattr(lib, name, None)
        if fn is None:
            continue
        address = ctypes.cast(fn, ctypes.c_void_p).value
        if address:
            llvm.add_symbol(name, address)
            added.append(name)
    return tuple(added)
