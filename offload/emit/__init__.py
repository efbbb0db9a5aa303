"""IR -> Python kernel source (``ast`` + ``ast.unparse``), shared by the CPU and GPU backends."""

from offload.emit.hooks import BaseHooks, EmitHooks, portable_math
from offload.emit.pysrc import HEADER, emit_source, print_source
from offload.emit.structure import emit_body, emit_body_and_locals

__all__ = [
    "HEADER",
    "BaseHooks",
    "EmitHooks",
    "emit_body",
    "emit_body_and_locals",
    "emit_source",
    "portable_math",
    "print_source",
]
