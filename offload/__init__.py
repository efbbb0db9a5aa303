"""offload: compile plain Python element functions for CPU cores and the GPU.

``compute_s(shape, fn)`` (one thread), ``compute_p`` (all cores), ``compute_g`` (GPU);
Repa-style delayed arrays (``from_function``, ``map``, ``zip_with``, ``backpermute``,
``traverse``, ``reshape``) that every ``compute_*`` fuses into one kernel; Accelerate-style
collectives on the same graph (``fold``, ``fold_all``, ``fold_seg``, ``stencil``, ...:
``offload.acc``); ``ol.config``
for settings; ``ol.explain`` for the IR, passes and generated kernels.
"""

from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

import numpy as np

from offload.acc import (
    ALL,
    constant,
    extend,
    fold,
    fold1,
    fold_all,
    fold_seg,
    generate,
    replicate,
    reverse,
    slice,
    stencil,
    transpose,
)
from offload.acc.filter import filter
from offload.acc.permute import IGNORE, PermuteIndexError, permute, scatter
from offload.acc.scan import (
    scanl,
    scanl1,
    scanl1_seg,
    scanl_seg,
    scanl_total,
    scanr,
    scanr1,
    scanr_total,
)
from offload.api import compute_g, compute_p, compute_s
from offload.config import config
from offload.delayed import Delayed, backpermute, from_function, map, reshape, traverse, zip_with
from offload.diagnostics import (
    AllocationNotAllowed,
    CompileError,
    GPUUnavailable,
    KernelFault,
    OffloadError,
    RecursionNotAllowed,
    SourceUnavailable,
    TypeMismatch,
    UnresolvedCall,
    UnsupportedSyntax,
    WriteNotAllowed,
)
from offload.explain import explain

try:
    __version__ = version("offload")
except PackageNotFoundError:  # a source tree on sys.path, not installed
    __version__ = "0+unknown"


_Array = TypeVar("_Array", bound=np.ndarray[Any, Any])


def use(array: _Array) -> _Array:
    """Freeze a host array for ``compute_g``: it is made read-only and its device copy is
    cached, so later calls do not copy it again. Returns the array (``TypeError`` for
    anything but a NumPy array)."""
    from offload.runtime.memory import use as _use

    _use(array)  # (returns ``array`` itself, typed as a plain ndarray)
    return array


__all__ = [
    "ALL",
    "IGNORE",
    "AllocationNotAllowed",
    "CompileError",
    "Delayed",
    "GPUUnavailable",
    "KernelFault",
    "OffloadError",
    "PermuteIndexError",
    "RecursionNotAllowed",
    "SourceUnavailable",
    "TypeMismatch",
    "UnresolvedCall",
    "UnsupportedSyntax",
    "WriteNotAllowed",
    "backpermute",
    "compute_g",
    "compute_p",
    "compute_s",
    "config",
    "constant",
    "explain",
    "extend",
    "filter",
    "fold",
    "fold1",
    "fold_all",
    "fold_seg",
    "from_function",
    "generate",
    "map",
    "permute",
    "replicate",
    "reshape",
    "reverse",
    "scanl",
    "scanl1",
    "scanl1_seg",
    "scanl_seg",
    "scanl_total",
    "scanr",
    "scanr1",
    "scanr_total",
    "scatter",
    "slice",
    "stencil",
    "transpose",
    "traverse",
    "use",
    "zip_with",
]
