"""32-bit integer arithmetic that tells NVVM it cannot overflow (``add/sub/mul nsw i32``).

The 32-bit kernel's index arithmetic (``offload.opt.narrow`` proved each such op's result
fits in ``int32`` under the launch guard, and marked it ``nsw``) would otherwise reach NVVM
as ``np.int32(a + b)``: numba adds in int64 and truncates, which LLVM folds to a plain
``add i32`` *without* the no-signed-wrap flag. Every load then sign-extends its 32-bit
offset per iteration, and induction-variable widening / loop strength reduction cannot turn
``base + sext(t + k) * 4`` into a pointer increment (that needs ``sext(a + b) == sext(a) +
sext(b)``, i.e. ``nsw``). These intrinsics emit the flagged instruction inline.

Names the kernel source calls (``NSW_FUNCTIONS``) are bound by ``offload.ptx.compile``:
``device_intrinsics()`` for PTX, ``SIMULATOR_FUNCTIONS`` (plain Python over NumPy scalars)
for numba's CUDA simulator, which cannot run intrinsics. On an overflow (never under the
guard) the device op's result is undefined; the simulator's wraps, like ``np.int32(a + b)``.
"""

from __future__ import annotations

import functools
import math
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from offload.ir.semantics import MATH_IMPL

NSW_FUNCTIONS = {"add": "nsw_add_i32", "sub": "nsw_sub_i32", "mul": "nsw_mul_i32"}
"""LLVM instruction -> the name of the kernel-source function that emits it with ``nsw``."""


def _wrapping(op: Callable[[int, int], int]) -> Callable[[Any, Any], np.int32]:
    def fn(a: Any, b: Any) -> np.int32:
        # In int64 (exact for two int32 operands), then wrapped to int32 as NumPy does.
        return np.int64(op(int(a), int(b))).astype(np.int32)  # type: ignore[no-any-return]

    return fn


RSQRT_FUNCTIONS = {"float32": "rsqrt_f32", "float64": "rsqrt_f64"}
"""Float type -> the kernel-source name of its reciprocal square root (``MATH rsqrt``, made
only under fastmath): libdevice's ``rsqrtf``/``rsqrt``, one ``rsqrt.approx`` instruction
where ``1 / sqrt(x)`` takes an approximate square root and an approximate division."""


def _rsqrt(x: Any) -> Any:
    return type(x)(1) / np.sqrt(x)


SIMULATOR_FUNCTIONS: dict[str, Callable[..., Any]] = {
    NSW_FUNCTIONS["add"]: _wrapping(lambda a, b: a + b),
    NSW_FUNCTIONS["sub"]: _wrapping(lambda a, b: a - b),
    NSW_FUNCTIONS["mul"]: _wrapping(lambda a, b: a * b),
    **dict.fromkeys(RSQRT_FUNCTIONS.values(), _rsqrt),
}
"""The simulator's equivalents: the int32 result of the exact int64 operation; ``1/sqrt``."""


_NUMPY_MATH: dict[str, Callable[..., Any]] = {**MATH_IMPL, "pow": np.power}
"""The interpreter's meaning of every ``MATH`` function (``offload.ir.semantics``), and
``pow`` (the emitter calls ``math.pow`` for float ``**``)."""

SIMULATOR_MATH = types.SimpleNamespace(
    **{name: getattr(math, name) for name in dir(math) if not name.startswith("_")} | _NUMPY_MATH
)
"""What the simulator's kernel source calls ``math``: Python's ``math`` module with every
function the emitter calls replaced by its NumPy ufunc, so that math errors follow the one
rule of every target -- NumPy's: NaN or inf, never an exception (``math.sqrt(-1.0)`` is NaN,
``math.exp(1000.0)`` inf, ``math.pow(0.0, -1.0)`` inf, ``math.fmod(1.0, 0.0)`` NaN) -- and
``floor``/``ceil``/``trunc`` keep the float type, as numba's device and CPU functions do
(Python's return an int, which overflows past int64). The kernel body runs under
``np.errstate(all="ignore")`` (``offload.ptx.compile.simulator_kernel``), so the ufuncs do
not warn either."""


def _nsw_intrinsic(instruction: str) -> Any:
    """A numba-cuda intrinsic ``(int, int) -> int32`` emitting ``<instruction> nsw i32``
    inline (an intrinsic's codegen is spliced into the caller, so there is no call)."""
    from numba import types
    from numba.cuda.extending import intrinsic

    def typer(typingctx: Any, a: Any, b: Any) -> Any:
        if not (isinstance(a, types.Integer) and isinstance(b, types.Integer)):
            return None
        sig = types.int32(a, b)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            # Operands are int32 by the emitter's contract; the casts are no-ops then.
            x, y = (
                context.cast(builder, v, t, types.int32)
                for v, t in zip(args, signature.args, strict=True)
            )
            return getattr(builder, instruction)(x, y, flags=["nsw"])

        return sig, codegen

    typer.__name__ = NSW_FUNCTIONS[instruction]
    return intrinsic(typer)  # type: ignore[no-untyped-call]


@functools.cache
def device_intrinsics() -> dict[str, Any]:
    """The intrinsics by kernel-source name (built on first use: importing this module
    does not import numba)."""
    from numba.cuda import libdevice

    found: dict[str, Any] = {name: _nsw_intrinsic(inst) for inst, name in NSW_FUNCTIONS.items()}
    found[RSQRT_FUNCTIONS["float32"]] = libdevice.rsqrtf
    found[RSQRT_FUNCTIONS["float64"]] = libdevice.rsqrt
    return found
