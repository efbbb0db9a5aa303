"""``SimDeviceArray``: what ``compute_g`` returns in device memory mode under the simulator.

On the GPU, device mode returns CuPy arrays: device memory that NumPy cannot read without an
explicit copy (``a.get()``; ``np.asarray(a)`` is a ``TypeError``). The simulator has no
device memory and CI has no CuPy, so its device-mode results are this stand-in, which keeps
those rules -- ``get()``, ``__cuda_array_interface__``, no implicit conversion -- so that code
tested under the simulator does on a GPU what it did there. It is accepted back as a captured
array and as ``out=`` by the simulator (as a CuPy array is by the GPU).
"""

from __future__ import annotations

from typing import Any

import numpy as np

IMPLICIT = (
    "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
    "NumPy array explicitly."
)
"""CuPy's message, word for word."""


class SimDeviceArray:
    """An array "in device memory" under the simulator (see the module doc): C-contiguous
    as made, a view where indexed."""

    __slots__ = ("host",)

    def __init__(self, host: np.ndarray[Any, Any]) -> None:
        self.host = host
        """The memory the simulated kernels read and write."""

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.host.shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        dt: np.dtype[Any] = self.host.dtype
        return dt

    @property
    def ndim(self) -> int:
        return int(self.host.ndim)

    @property
    def size(self) -> int:
        return int(self.host.size)

    @property
    def nbytes(self) -> int:
        return int(self.host.nbytes)

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(self.host.strides)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (int(self.host.ctypes.data), False),
            "strides": None if self.host.flags.c_contiguous else self.strides,
            "version": 3,
        }

    def get(self) -> np.ndarray[Any, Any]:
        """A host copy (CuPy's ``get``)."""
        return self.host.copy()

    def copy_to_host(self) -> np.ndarray[Any, Any]:
        """A host copy (numba device arrays' name for it)."""
        return self.host.copy()

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray[Any, Any]:
        raise TypeError(IMPLICIT)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.host[key] = value.host if isinstance(value, SimDeviceArray) else value

    def __getitem__(self, key: Any) -> SimDeviceArray:
        """A view "in device memory", as CuPy's indexing gives (``a[lo:hi]``)."""
        return SimDeviceArray(np.asarray(self.host[key]))

    def __len__(self) -> int:
        return len(self.host)

    def __repr__(self) -> str:
        return f"SimDeviceArray(shape={self.shape}, dtype={self.dtype})"
