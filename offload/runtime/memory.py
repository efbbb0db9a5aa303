"""Unified (managed) memory: results as NumPy arrays the host and the GPU both use.

* ``ManagedPool`` checks free device memory before every new block and refuses with
  ``MemoryError`` rather than oversubscribing (an oversubscribed managed allocation can
  hang the GPU).
* A NumPy array over managed memory keeps its ``ManagedBuffer`` alive through ``.base``;
  ``managed_buffer(x)`` recognises such arrays (and views of them), so that a result passed
  into the next ``compute_g`` is used in place, never copied.
* ``use(x)`` freezes a host array (``writeable=False``) so that its device copy can be
  cached: ``FrozenTable`` keys copies by ``id`` and drops them when the array dies.
"""

from __future__ import annotations

import ctypes
import functools
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.runtime.pool import size_class
from offload.runtime.residency import HOST_PAGES
from offload.runtime.staging import stages, to_device
from offload.runtime.views import DeviceView, c_strides, cuda_array_view, element_strides

MIB = 1 << 20


def safety_margin(total: int) -> int:
    """Device memory left free after any managed allocation: the larger of 256 MiB and
    5% of the card (the CUDA context, CuPy's pool and other processes need some)."""
    return max(256 * MIB, total // 20)


class ManagedBuffer:
    """Owner of one managed allocation: NumPy arrays over it keep it alive (through the
    ctypes block their ``.base`` chain ends in), and its death hands the block back to its
    pool (``__del__``: cheaper than a ``weakref.finalize`` per result)."""

    __slots__ = ("__weakref__", "mem", "nbytes", "pool", "ptr", "size")

    def __init__(
        self, mem: Any, nbytes: int, pool: ManagedPool | None = None, size: int = 0
    ) -> None:
        self.mem = mem
        """The CuPy ``MemoryPointer``; freeing it frees the allocation."""
        self.nbytes = nbytes
        """Bytes the array over it uses (the block may be larger: ``size``)."""
        self.ptr = int(mem.ptr)
        self.pool = pool
        self.size = size

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr, False), "version": 3}

    def __del__(self) -> None:
        pool = self.pool
        if pool is not None:
            pool.release(self.mem, self.size)


def _array_over(
    buf: ManagedBuffer, shape: tuple[int, ...], dtype: np.dtype[Any]
) -> np.ndarray[Any, Any]:
    # A ctypes block over the memory gives NumPy a buffer in one call (building the array
    # from ``__array_interface__`` costs ~3 us); the block carries the owner.
    raw: Any = (ctypes.c_char * max(buf.nbytes, 1)).from_address(buf.ptr)
    raw.offload_owner = buf
    return np.ndarray(shape, dtype, buffer=raw)


def managed_buffer(x: np.ndarray[Any, Any]) -> ManagedBuffer | None:
    """The managed allocation ``x`` is a view of, if any (walks the ``.base`` chain)."""
    base: object = x
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, ManagedBuffer):
        return base
    owner = getattr(base, "offload_owner", None)
    return owner if isinstance(owner, ManagedBuffer) else None


def whole_block(x: np.ndarray[Any, Any]) -> ManagedBuffer | None:
    """The managed allocation ``x`` spans from end to end (a result as allocated: it starts
    where its block starts), else ``None``; cheaper than ``managed_buffer`` or
    ``x.__array_interface__``, for the warm path."""
    owner = getattr(x.base, "offload_owner", None)
    return owner if type(owner) is ManagedBuffer and x.nbytes == owner.nbytes else None


def _check_free(cp: Any, nbytes: int) -> None:
    free, total = (int(v) for v in cp.cuda.runtime.memGetInfo())
    margin = safety_margin(total)
    if nbytes + margin > free:
        raise MemoryError(
            f"compute_g: a result of {nbytes / MIB:.1f} MiB does not fit in unified memory: "
            f"{free / MIB:.1f} MiB of the device's {total / MIB:.1f} MiB are free and "
            f"{margin / MIB:.0f} MiB are kept as a safety margin (oversubscribing managed "
            "memory can hang the GPU); use device mode or a smaller problem"
        )


class ManagedPool:
    """Unified mode's results: managed blocks in size classes (as ``DevicePool``), handed
    back when the last array over one dies.

    ``cudaMallocManaged`` and the ``cudaFree`` of a dead result (which synchronises the
    device) would otherwise cost more than the kernel at small sizes. The free-memory check
    runs before every *new* managed allocation; a
    block taken from the free list is not a new allocation (the device already counts it
    as used), so it needs none. A check that fails first releases the cached blocks --
    this pool's and, through ``release``, the device blocks the same backend caches (a
    unified call's own arrays, ``GPUBackend.device_twin``) -- and asks again, so the pool
    never turns a fitting request into a ``MemoryError``."""

    def __init__(self, cp: Any, release: Callable[[], None] | None = None) -> None:
        self._cp = cp
        self._release = release
        self._free: dict[int, list[Any]] = {}
        self.cached_bytes = 0
        """Bytes held in free lists (not in use)."""
        self.hits = 0
        self.misses = 0

    def release(self, mem: Any, size: int) -> None:
        """Take back a block whose last array died."""
        self._free.setdefault(size, []).append(mem)
        self.cached_bytes += size

    def empty(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
        """A C-contiguous NumPy array of ``shape`` over a pooled managed block."""
        nbytes = math.prod(shape) * dtype.itemsize
        size = size_class(nbytes)
        free = self._free.get(size)
        if free:
            mem = free.pop()
            self.cached_bytes -= size
            self.hits += 1
        else:
            try:
                _check_free(self._cp, size)
            except MemoryError:
                if not self.cached_bytes and self._release is None:
                    raise
                self.free_all()
                if self._release is not None:
                    self._release()
                _check_free(self._cp, size)
            mem = self._cp.cuda.malloc_managed(size)
            self.misses += 1
        return _array_over(ManagedBuffer(mem, nbytes, self, size), shape, dtype)

    def free_all(self) -> None:
        """Release every cached block to the driver."""
        self._free.clear()
        self.cached_bytes = 0


def prefetch(cp: Any, buf: ManagedBuffer, stream_ptr: int | None, device: int = 0) -> None:
    """Ask the driver to migrate ``buf`` to ``device`` before a kernel touches it (a hint:
    failure only costs page faults, so it is not an error) -- unless none of its pages is
    on the host, where the request would only cost the driver's walk over them
    (``offload.runtime.residency``). ``stream_ptr`` ``None``: the current stream."""
    if buf.nbytes == 0 or not HOST_PAGES.touched(buf.ptr, buf.nbytes):
        return
    if stream_ptr is None:
        stream_ptr = int(cp.cuda.get_current_stream().ptr)
    try:
        cp.cuda.runtime.memPrefetchAsync(buf.ptr, buf.nbytes, device, stream_ptr)
    except Exception:  # e.g. a device without concurrent managed access
        return


@dataclass
class _Frozen:
    ref: weakref.ReferenceType[np.ndarray[Any, Any]]
    copy: Any = None
    """The device copy (a CuPy array), made on first use."""


class FrozenTable:
    """Device copies of host arrays frozen with ``use(x)``, keyed by ``id(x)``."""

    def __init__(self) -> None:
        self._entries: dict[int, _Frozen] = {}

    def freeze(self, x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """Mark ``x`` read-only and remember it; returns ``x``. Freezing an array that is
        writeable again (thawed by the user, perhaps written) makes a new record: its old
        device copy, and anything specialised on its old contents, is not used again."""
        thawed = x.flags.writeable
        x.flags.writeable = False
        key = id(x)
        entry = self._entries.get(key)
        if entry is not None and entry.ref() is x and not thawed:
            return x
        if entry is None:
            weakref.finalize(x, self._entries.pop, key, None)
        self._entries[key] = _Frozen(weakref.ref(x))
        return x

    def record(self, x: Any) -> object | None:
        """``x``'s freeze record while ``x`` is frozen and read-only (a new record after
        each thaw and freeze, so equal records mean unchanged contents), else ``None``."""
        entry = self._entries.get(id(x))
        if entry is None or entry.ref() is not x or not isinstance(x, np.ndarray):
            return None
        return None if x.flags.writeable else entry

    def lookup(self, cp: Any, x: np.ndarray[Any, Any]) -> Any | None:
        """The cached device copy of ``x`` if ``x`` is frozen and still read-only, and no
        array it is a view of is writeable (a write through that one would change ``x``
        under its copy: such a view is copied on every call, like a plain host array)."""
        entry = self._entries.get(id(x))
        if entry is None or entry.ref() is not x:
            return None
        if x.flags.writeable:  # thawed by the user: the copy may be stale
            del self._entries[id(x)]
            return None
        if _writable_base(x):
            return None
        if entry.copy is None:
            entry.copy = cp.asarray(x)
        return entry.copy

    def __len__(self) -> int:
        return len(self._entries)


def _writable_base(x: np.ndarray[Any, Any]) -> bool:
    """Whether an array ``x`` is a view of (directly or through other views) is writeable."""
    base = x.base
    while isinstance(base, np.ndarray):
        if base.flags.writeable:
            return True
        base = base.base
    return False


@functools.cache
def frozen_table() -> FrozenTable:
    """The process-wide table behind ``use`` (a cache of device copies)."""
    return FrozenTable()


def use(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Freeze host array ``x`` so that compute_g copies it to the device once, not per call.

    To change a frozen array, thaw it (``x.flags.writeable = True``), write, and call
    ``use(x)`` again: that makes a new record, so the old device copy is not used. A view
    of a writeable array is frozen too, but copied on every call (the other array could
    change it)."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"use() takes a NumPy array, not {type(x).__name__}")
    return frozen_table().freeze(x)


def input_view(
    cp: Any, x: Any, stream_ptr: int, table: FrozenTable | None = None, device: int = 0
) -> DeviceView:
    """A device view of captured array ``x`` for one launch.

    Device arrays and managed NumPy arrays are used in place; frozen host arrays use their
    cached copy; any other host array is copied now (held by the view until the launch)."""
    view = cuda_array_view(x)
    if view is not None:
        return view
    if not isinstance(x, np.ndarray):
        x = np.asarray(x)
    buf = managed_buffer(x)
    if buf is not None:
        prefetch(cp, buf, stream_ptr, device)
        ptr = int(x.__array_interface__["data"][0])
        strides = element_strides(x.strides, x.itemsize, "managed array")
        return DeviceView(ptr, x.shape, strides, x.dtype, x)
    copy = (table or frozen_table()).lookup(cp, x)
    if copy is None:
        copy = to_device(cp, x, stream_ptr) if stages(cp, x) else cp.asarray(x)
    view = cuda_array_view(copy)
    assert view is not None
    return view


def cupy_c_contiguous(x: Any) -> bool:
    """Whether CuPy array ``x`` is C-contiguous (its flag, without building a Flags object)."""
    flag = getattr(x, "_c_contiguous", None)
    return bool(x.flags.c_contiguous if flag is None else flag)


def output_pointer(x: Any) -> int:
    """The device address of output array ``x`` (a managed NumPy array, a device array or a
    ``DeviceView``), which must be C-contiguous; the warm path, so no view is built."""
    t = type(x)
    if t is np.ndarray:
        owner = whole_block(x)
        if owner is not None and x.flags.c_contiguous:
            return owner.ptr  # (``x.__array_interface__`` costs more than a microsecond)
    if isinstance(x, DeviceView):
        return x.ptr
    if t.__name__ == "ndarray" and t.__module__.startswith("cupy"):
        if not cupy_c_contiguous(x):
            raise ValueError("compute_g out= arrays must be C-contiguous")
        return int(x.data.ptr)
    if isinstance(x, np.ndarray):
        if managed_buffer(x) is None:
            raise TypeError(
                "compute_g out= must be a unified-memory array (a compute_g result) or a "
                "device array, not a plain NumPy array"
            )
        if not x.flags.c_contiguous:
            raise ValueError("compute_g out= arrays must be C-contiguous")
        return int(x.__array_interface__["data"][0])
    return output_view(x).ptr


def output_view(x: Any) -> DeviceView:
    """A device view of an output array (managed NumPy or device array), C-contiguous."""
    view = cuda_array_view(x)
    if view is None and isinstance(x, np.ndarray) and managed_buffer(x) is not None:
        ptr = int(x.__array_interface__["data"][0])
        view = DeviceView(ptr, x.shape, element_strides(x.strides, x.itemsize, "out"), x.dtype, x)
    if view is None:
        raise TypeError("compute_g output must be a unified-memory array or a device array")
    if view.strides != c_strides(view.shape) and math.prod(view.shape) > 1:
        raise ValueError("compute_g output arrays must be C-contiguous")
    return view
