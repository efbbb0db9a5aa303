"""Captured values: how they are typed and keyed, and the paths that re-read them.

A captured array or scalar becomes a kernel parameter (never a baked-in constant), and the
``CapturePath`` recorded for it re-reads the *current* value on every call, so a rebound
global or a changed closure cell never gives a stale result. This module is the
vocabulary: paths and their one translation to a Python expression (``steps_expr``), the
kinds that make the type key. ``offload.frontend.reader`` generates, from both, the
functions that read a call's values and check their types.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.frontend.values import Step
from offload.ir.types import BOOL, F64, I64, ArrayType, ScalarType, scalar_of_dtype

INT64_MIN, INT64_END = -(2**63), 2**63
"""A Python int captured in ``[INT64_MIN, INT64_END)`` is an int64 parameter; any other is
kind ``"pybigint"``, which no kernel takes (the frontend reports it)."""


@dataclass(frozen=True)
class CapturePath:
    """How to re-read a captured value from the lowering root (function or delayed array).

    Steps apply left to right: ``("closure", k)`` reads cell ``k`` of a function,
    ``("global", name)`` its global ``name``, ``("attr", name)`` an attribute,
    ``("item", k)`` item ``k`` of a tuple, ``("length_is", n)`` whether a tuple has ``n``
    items (a guard: the kernel is built for that length), and ``("const", obj)`` replaces
    the current object by ``obj``."""

    steps: tuple[Step, ...]

    def __str__(self) -> str:
        return "".join(f"{k}:{a if k != 'const' else type(a).__name__}/" for k, a in self.steps)


def steps_expr(
    steps: Sequence[Step],
    tag: str,
    namespace: dict[str, object],
    hoisted: dict[str, str] | None = None,
) -> str:
    """The Python expression that follows ``steps`` from the name ``root``: the one
    translation of a capture path, used by every generated reader and by
    ``CapturePath.fetch``.

    Objects the expression needs (global names, attribute names, constants) are added to
    ``namespace`` as ``_<kind initial><tag>_<step>`` (``tag`` keeps paths apart), and
    ``getattr`` as ``_getattr``. With ``hoisted``, a first step through the root's closure or
    globals reads ``_c``/``_g`` instead and records ``_c = root.__closure__`` /
    ``_g = root.__globals__`` in ``hoisted`` (name -> expression), for the caller to
    assign once before the reads."""
    expr = "root"
    for j, (kind, arg) in enumerate(steps):
        name = f"_{kind[0]}{tag}_{j}"
        if kind == "closure":
            if hoisted is not None and j == 0:  # one closure tuple for every capture
                hoisted["_c"] = "root.__closure__"
                expr = f"_c[{int(arg)}].cell_contents"  # type: ignore[call-overload]
            else:
                expr = f"{expr}.__closure__[{int(arg)}].cell_contents"  # type: ignore[call-overload]
        elif kind == "global":
            namespace[name] = arg
            if hoisted is not None and j == 0:
                hoisted["_g"] = "root.__globals__"
                expr = f"_g[{name}]"
            else:
                expr = f"{expr}.__globals__[{name}]"
        elif kind == "attr":
            namespace["_getattr"] = getattr
            namespace[name] = str(arg)
            expr = f"_getattr({expr}, {name})"
        elif kind == "item":  # an item of a captured tuple
            expr = f"{expr}[{int(arg)}]"  # type: ignore[call-overload]
        elif kind == "length_is":  # a captured tuple still has the length compiled for
            namespace["_len"] = len
            expr = f"(_len({expr}) == {int(arg)})"  # type: ignore[call-overload]
        else:
            namespace[name] = arg
            expr = name
    return expr


def is_array(value: object) -> bool:
    """NumPy arrays and objects exposing an array interface (CuPy, numba device arrays) or
    DLPack with ``ndim`` and ``dtype`` (torch, JAX)."""
    if isinstance(value, np.ndarray):
        return True
    if isinstance(value, type):
        return False
    return (
        hasattr(value, "__cuda_array_interface__")
        or hasattr(value, "__array_interface__")
        or (hasattr(value, "__dlpack__") and hasattr(value, "ndim") and hasattr(value, "dtype"))
    )


def array_dtype(value: object) -> np.dtype[Any]:
    """The NumPy dtype of an array: its ``dtype`` where NumPy reads it, else what its
    interface says (a DLPack object's dtype may be its library's own, e.g. torch.float32)."""
    dt: Any = getattr(value, "dtype", None)
    if dt is not None:
        with contextlib.suppress(TypeError):
            known: np.dtype[Any] = np.dtype(dt)
            return known
    for name in ("__array_interface__", "__cuda_array_interface__"):
        iface = getattr(value, name, None)
        if isinstance(iface, dict):
            return np.dtype(iface["typestr"])
    return np.dtype(np.from_dlpack(value).dtype)  # type: ignore[arg-type]


_PLAIN_GETITEM = (np.ndarray.__getitem__, np.memmap.__getitem__)
"""Indexing as ndarray's: np.memmap's only re-wraps what it returns."""


def indexing_differs(t: type) -> bool:
    """Whether ``t`` is an ndarray subclass whose indexing differs from ndarray's (it
    overrides ``__getitem__``): np.ma.MaskedArray (a mask), np.matrix (rows stay 2-D),
    np.recarray, np.char.chararray, and user subclasses doing the same. Compiled code reads
    the array's data as a plain ndarray would, so such an array would be read wrongly
    (the mask ignored) or fail inside numba; it is refused instead. A subclass that only
    adds attributes or methods (and np.memmap) indexes as ndarray does and is accepted."""
    return (
        issubclass(t, np.ndarray)
        and t is not np.ndarray
        and getattr(t, "__getitem__", None) not in _PLAIN_GETITEM
    )


def refused_array_message(what: str, t: type) -> str:
    """The ``TypeError`` text for ``what`` (``out=``, or ``captured variable 'M'``), an
    array of type ``t`` for which ``indexing_differs``."""
    hint = "m.filled(fill_value) or m.data" if issubclass(t, np.ma.MaskedArray) else "np.asarray(a)"
    return (
        f"{what} is a {t.__module__}.{t.__qualname__}, an ndarray subclass whose indexing "
        f"differs from ndarray's; offload reads only plain arrays: pass {hint} instead"
    )


_DEVICE_ARRAYS: set[type] = set()
"""Array types whose ``dtype`` is a NumPy dtype and ``ndim`` an int on every instance
(CuPy's, once one was seen): keyed as ``np.ndarray`` is."""
_DTYPES = frozenset(type(np.dtype(c)) for c in "?bhilqBHILQefdFD")
"""The classes of NumPy's dtypes (``np.dtype`` subclasses, one per kind)."""


def capture_kind(value: object) -> tuple[object, ...]:
    """The part of a captured value's identity that compiled code depends on."""
    t = type(value)
    if t is bool:
        return ("pybool",)
    if t is int:
        # An int beyond int64 gets its own kind, so that it misses every compiled kernel
        # and the frontend reports it instead of the launch overflowing.
        return ("pyint",) if INT64_MIN <= value < INT64_END else ("pybigint",)  # type: ignore[operator]
    if t is float:
        return ("pyfloat",)
    if t is np.ndarray or t in _DEVICE_ARRAYS:  # (the common cases first: what follows
        arr: Any = value  # costs microseconds: CuPy builds its interface dict each time)
        return ("array", arr.dtype.str, arr.ndim)
    if isinstance(value, np.generic):
        return ("np", value.dtype.str)
    if is_array(value):
        if indexing_differs(t):  # refused by ``classify``
            return ("object", t.__module__, t.__qualname__)
        arr = value
        if t.__module__.startswith("cupy") and type(getattr(arr, "dtype", None)) in _DTYPES:
            _DEVICE_ARRAYS.add(t)  # (CuPy's arrays: a NumPy dtype and an int ndim)
        return ("array", array_dtype(arr).str, int(arr.ndim))
    return ("object", t.__module__, t.__qualname__)


def plain_shape(value: object) -> tuple[int, ...] | None:
    """The shape of a NumPy array, or of a CuPy array once ``capture_kind`` has seen one,
    as it is (a tuple of ints: no conversion); ``None`` for anything else."""
    t = type(value)
    if t is np.ndarray or t in _DEVICE_ARRAYS:
        shape: tuple[int, ...] = value.shape  # type: ignore[attr-defined]
        return shape
    return None


def capture_type_key(values: Sequence[object]) -> tuple[object, ...]:
    """Key of the capture types a kernel was compiled for (the driver's dispatch key)."""
    return tuple(capture_kind(v) for v in values)


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
