"""Captured values: how they are typed, keyed and re-read at call time.

A captured array or scalar becomes a kernel parameter (never a baked-in constant), and the
``CapturePath`` recorded for it re-reads the *current* value on every call, so a rebound
global or a changed closure cell never gives a stale result.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.frontend.values import Step
from offload.ir.capture_steps import steps_expr
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
        # An int beyond int64 gets its own kind, so that it misses every compiled kernel
        # and the frontend reports it instead of the launch overflowing.
        return ("pyint",) if -(2**63) <= value < 2**63 else ("pybigint",)  # type: ignore[operator]
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


Fetcher = Callable[[object], list[object]]


def make_fetcher(captures: Sequence[CapturePath]) -> Fetcher:
    """A function returning the current values of ``captures`` from a root, equivalent to
    ``fetch_captures`` but generated as one straight-line expression per capture: the warm
    path reads captures on every call, and walking the steps in a loop costs more than the
    reads themselves."""
    namespace: dict[str, object] = {}
    items = [steps_expr(path.steps, str(k), namespace) for k, path in enumerate(captures)]
    code = f"def fetch(root):\n    return [{', '.join(items)}]\n"
    exec(compile(code, "<offload capture fetcher>", "exec"), namespace)
    fetch: Fetcher = namespace["fetch"]  # type: ignore[assignment]
    return fetch


class TypeGuard:
    """Re-validates a capture type key without rebuilding it.

    ``capture_type_key`` depends only on each value's type, plus dtype and rank for arrays
    (both can change on one object: ``a.shape = ...`` reshapes in place). A guard built from
    one call's values says whether another call's values have the same key: ``holds`` is a
    generated straight-line check, one ``type(v) is T`` per value and a rank and dtype test
    per array. It never holds the values, so it neither keeps a rebound array alive nor can
    it make a value stale (the values passed on are always the freshly fetched ones)."""

    __slots__ = ("arrays", "holds", "types")

    def __init__(self, types_: tuple[type, ...], arrays: tuple[tuple[int, Any, int], ...]):
        self.types = types_
        self.arrays = arrays
        """(capture index, dtype, ndim) of each array capture."""
        namespace: dict[str, object] = {}
        tests = [f"len(v) == {len(types_)}"]
        for k, t in enumerate(types_):
            namespace[f"T{k}"] = t
            tests.append(f"type(v[{k}]) is T{k}")
            if t is int:  # beyond int64 is another kind ("pybigint"): the frontend says so
                tests.append(f"{-(2**63)} <= v[{k}] < {2**63}")
        for k, dtype, ndim in arrays:
            namespace[f"D{k}"] = dtype
            tests.append(f"v[{k}].ndim == {ndim}")
            tests.append(f"(v[{k}].dtype is D{k} or v[{k}].dtype == D{k})")
        code = f"def holds(v):\n    return {' and '.join(tests)}\n"
        exec(compile(code, "<offload type guard>", "exec"), namespace)
        self.holds: Callable[[Sequence[object]], bool] = namespace["holds"]  # type: ignore[assignment]
        """Whether a call's values have the type key the guard was built from."""


def type_guard(values: Sequence[object]) -> TypeGuard | None:
    """A ``TypeGuard`` for ``values``, or ``None`` where a value's key is not a function of
    its type (and dtype/rank for arrays), e.g. a datetime64 scalar whose unit is per value."""
    arrays: list[tuple[int, Any, int]] = []
    for k, v in enumerate(values):
        kind = capture_kind(v)
        tag = kind[0]
        if tag == "array":
            if not _array_by_type(type(v)):
                return None  # is_array answered for this instance, not for its type
            arr: Any = v
            arrays.append((k, arr.dtype, int(arr.ndim)))
        elif tag == "np":
            generic: Any = v
            if np.dtype(type(generic)).str != generic.dtype.str:
                return None
        elif tag == "object":
            return None  # keyed by type, but whether it is an array can be per instance
    return TypeGuard(tuple(map(type, values)), tuple(arrays))


def _array_by_type(t: type) -> bool:
    return issubclass(t, np.ndarray) or any(
        hasattr(t, name) for name in ("__cuda_array_interface__", "__array_interface__")
    )


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
