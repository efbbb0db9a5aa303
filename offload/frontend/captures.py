"""Captured values: how they are typed, keyed and re-read at call time.

A captured array or scalar becomes a kernel parameter (never a baked-in constant), and the
``CapturePath`` recorded for it re-reads the *current* value on every call, so a rebound
global or a changed closure cell never gives a stale result.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.frontend.values import Step
from offload.ir.types import BOOL, F64, I64, ArrayType, ScalarType, scalar_of_dtype


@dataclass(frozen=True)
class CapturePath:
    """How to re-read a captured value from the lowering root (function or delayed array).

    Steps apply left to right: ``("closure", k)`` reads cell ``k`` of a function,
    ``("global", name)`` its global ``name``, ``("attr", name)`` an attribute, and
    ``("const", obj)`` replaces the current object by ``obj``."""

    steps: tuple[Step, ...]

    def fetch(self, root: object) -> object:
        """The value this path designates now."""
        obj: Any = root
        for kind, arg in self.steps:
            if kind == "closure":
                obj = obj.__closure__[arg].cell_contents
            elif kind == "global":
                obj = obj.__globals__[arg]
            elif kind == "attr":
                obj = getattr(obj, str(arg))
            else:
                obj = arg
        return obj

    def __str__(self) -> str:
        return "".join(f"{k}:{a if k != 'const' else type(a).__name__}/" for k, a in self.steps)


def is_array(value: object) -> bool:
    """NumPy arrays and objects exposing an array interface (CuPy, numba device arrays)."""
    if isinstance(value, np.ndarray):
        return True
    if isinstance(value, type):
        return False
    return hasattr(value, "__cuda_array_interface__") or hasattr(value, "__array_interface__")


def capture_kind(value: object) -> tuple[object, ...]:
    """The part of a captured value's identity that compiled code depends on."""
    t = type(value)
    if t is bool:
        return ("pybool",)
    if t is int:
        return ("pyint",)
    if t is float:
        return ("pyfloat",)
    if isinstance(value, np.generic):
        return ("np", value.dtype.str)
    if is_array(value):
        arr: Any = value
        return ("array", np.dtype(arr.dtype).str, int(arr.ndim))
    return ("object", t.__module__, t.__qualname__)


def capture_type_key(values: Sequence[object]) -> tuple[object, ...]:
    """Key of the capture types a kernel was compiled for (the driver's dispatch key)."""
    return tuple(capture_kind(v) for v in values)


def fetch_captures(target: object, captures: Sequence[CapturePath]) -> list[object]:
    """The current values of ``captures`` (in ``Function.captures`` order)."""
    return [path.fetch(target) for path in captures]


def capture_ir_type(value: object) -> tuple[ArrayType | ScalarType, bool] | None:
    """The IR type of a captured value and whether it is weak; ``None`` if unsupported."""
    kind = capture_kind(value)
    tag = kind[0]
    if tag == "pybool":
        return BOOL, True
    if tag == "pyint":
        return I64, True
    if tag == "pyfloat":
        return F64, True
    if tag == "np":
        st = scalar_of_dtype(kind[1])
        return None if st is None else (st, False)
    if tag == "array":
        st = scalar_of_dtype(kind[1])
        return None if st is None else (ArrayType(st, int(kind[2])), False)  # type: ignore[call-overload]
    return None


def is_compile_time_object(value: object) -> bool:
    """Modules and functions: resolved when the kernel is compiled, not captured."""
    return isinstance(value, types.ModuleType | types.FunctionType | types.BuiltinFunctionType)
