"""A kernel launch packed once, of which later launches change only some pointers.

A replayed step (``offload.replay``) launches the same kernel over inputs of the same
kinds on every call: the same shapes, strides, dtypes and scalars (the plan's
signature says so), so every parameter but the arrays' addresses is what it was. A
``FrozenLaunch`` keeps a private copy of the parameter image of one launch and the byte
offsets of its pointer parameters; a launch writes the new addresses into their slots
(one ``struct.pack_into`` each) and calls ``cuLaunchKernel`` -- no keying, flattening or
converting of the other parameters, a few µs of host time less than the packers that
start from the call's objects (``offload.ptx.args``, ``offload.acc.skeletons.rawlaunch``).

The image is private, so a frozen launch never races the packer it was taken from; its
own lock keeps two threads replaying one plan apart between the pointer stores and the
driver call (which copies the values).
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Sequence
from typing import Any

from offload.runtime.gpu import bind_thread

_POINTER = struct.Struct("=Q").pack_into


class FrozenLaunch:
    """``cuLaunchKernel(fn_ptr, dims, shared, stream, params)`` with the parameter image
    ``image`` (parameter ``k`` at byte ``offsets[k]``) but for the pointers at the byte
    offsets ``patch``, given to each launch in order."""

    __slots__ = ("_cp", "_launch", "address", "dims", "fn_ptr", "lock", "patch", "storage")

    def __init__(  # noqa: PLR0917  (a launch's parts, as the driver takes them)
        self,
        cp: Any,
        fn_ptr: int,
        dims: tuple[int, int, int, int, int, int],
        image: bytes,
        offsets: Sequence[int],
        patch: Sequence[int],
    ) -> None:
        self._cp = cp
        self._launch = cp.cuda.driver.launchKernel
        self.fn_ptr = fn_ptr
        self.dims = dims
        self.storage = (ctypes.c_char * max(8, len(image))).from_buffer_copy(
            image.ljust(max(8, len(image)), b"\0")
        )
        base = ctypes.addressof(self.storage)
        pointers = (ctypes.c_void_p * max(1, len(offsets)))(*[base + o for o in offsets])
        self.address = (ctypes.addressof(pointers), pointers)
        self.patch = tuple(patch)
        self.lock = threading.Lock()

    def __call__(self, *pointers: int) -> None:
        """Launch on CuPy's current stream with ``pointers`` in the ``patch`` slots."""
        cp = self._cp
        bind_thread(cp)
        stream = cp.cuda.get_current_stream().ptr
        gx, gy, gz, bx, by, bz = self.dims
        storage = self.storage
        with self.lock:
            for off, ptr in zip(self.patch, pointers, strict=True):
                _POINTER(storage, off, ptr)
            self._launch(self.fn_ptr, gx, gy, gz, bx, by, bz, 0, stream, self.address[0], 0)
