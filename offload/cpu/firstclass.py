"""numba first-class function helpers of the ``cpu-par`` driver (``offload.cpu.parallel``),
imported by the driver's source; this module imports numba (the others of ``offload.cpu``
import it on first need)."""

from __future__ import annotations

from typing import Any

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def kernel_at(typingctx: Any, address: Any, args: Any) -> Any:
    """The numba function at ``address`` that takes ``(int64, int64, *args)`` and returns
    nothing, as a first-class function: called at its entry point with numba's calling
    convention, as numba calls a jit function passed as an argument (not through a C
    wrapper)."""
    signature = types.none(types.int64, types.int64, *args.types)
    function_type = types.FunctionType(signature)

    def codegen(context: Any, builder: Any, sig: Any, llargs: Any) -> Any:
        value = cgutils.create_struct_proxy(function_type)(context, builder)  # type: ignore[no-untyped-call]
        entry = builder.inttoptr(llargs[0], context.get_value_type(types.voidptr))
        null = cgutils.get_null_value(entry.type)  # type: ignore[no-untyped-call]
        value.jit_addr = entry  # (numba calls c_addr, a C wrapper, only where this is null)
        value.c_addr = null
        value.py_addr = null
        return value._getvalue()

    return function_type(types.int64, args), codegen
