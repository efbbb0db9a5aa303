"""offload: compile plain Python element functions for CPU cores and the GPU."""

from offload.diagnostics import (
    AllocationNotAllowed,
    OffloadError,
    RecursionNotAllowed,
    TypeMismatch,
    UnsupportedSyntax,
)

__all__ = [
    "AllocationNotAllowed",
    "OffloadError",
    "RecursionNotAllowed",
    "TypeMismatch",
    "UnsupportedSyntax",
]
