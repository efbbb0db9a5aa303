"""IR types: scalars (one per NumPy dtype the language supports) and captured arrays.

Types are interned, immutable values; compare them with ``==`` (or ``is``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ScalarType:
    """A scalar of one NumPy dtype; ``name`` is the printed spelling (``f32``, ``i64``)."""

    name: str
    """Printed name: ``bool``, ``i8``..``i64``, ``u8``..``u64``, ``f32``, ``f64``."""
    dtype: np.dtype[np.generic]
    """The NumPy dtype the scalar has in arrays and in the interpreter."""

    def __str__(self) -> str:
        return self.name

    @property
    def is_bool(self) -> bool:
        return self.dtype.kind == "b"

    @property
    def is_int(self) -> bool:
        """Signed or unsigned integer (not bool)."""
        return self.dtype.kind in "iu"

    @property
    def is_signed(self) -> bool:
        return self.dtype.kind == "i"

    @property
    def is_float(self) -> bool:
        return self.dtype.kind == "f"

    @property
    def bits(self) -> int:
        return 1 if self.is_bool else self.dtype.itemsize * 8


@dataclass(frozen=True)
class ArrayType:
    """A read-only captured array: element type and rank (strides are a backend matter)."""

    elem: ScalarType
    """Element type."""
    ndim: int
    """Number of dimensions (>= 0)."""

    def __str__(self) -> str:
        return f"array<{self.elem},{self.ndim}>"


@dataclass(frozen=True)
class LocalType:
    """A small local array of the element function (``np.zeros(K)``, ``[0.0] * K``): its
    element type and compile-time shape. Values of this type are made only by ``LOCAL``
    and read and written only by ``LOCAL_LOAD``/``LOCAL_STORE``/``LOCAL_FILL``."""

    elem: ScalarType
    """Element type."""
    shape: tuple[int, ...]
    """The extents, each >= 1 (rank 1 or 2)."""

    def __str__(self) -> str:
        return f"local<{self.elem},{'x'.join(map(str, self.shape))}>"

    @property
    def size(self) -> int:
        """The number of elements."""
        n = 1
        for k in self.shape:
            n *= k
        return n


Type = ScalarType | ArrayType | LocalType


def _scalar(name: str, dtype: str) -> ScalarType:
    return ScalarType(name, np.dtype(dtype))


BOOL = _scalar("bool", "bool")
I8 = _scalar("i8", "int8")
I16 = _scalar("i16", "int16")
I32 = _scalar("i32", "int32")
I64 = _scalar("i64", "int64")
U8 = _scalar("u8", "uint8")
U16 = _scalar("u16", "uint16")
U32 = _scalar("u32", "uint32")
U64 = _scalar("u64", "uint64")
F32 = _scalar("f32", "float32")
F64 = _scalar("f64", "float64")

SCALARS: tuple[ScalarType, ...] = (BOOL, I8, I16, I32, I64, U8, U16, U32, U64, F32, F64)
_BY_NAME = {t.name: t for t in SCALARS}
_BY_DTYPE = {t.dtype: t for t in SCALARS}

INDEX = I64
"""The type of index parameters and of shape extents."""


def scalar_by_name(name: str) -> ScalarType:
    """The scalar type printed as ``name``; ``KeyError`` if there is none."""
    return _BY_NAME[name]


def scalar_of_dtype(dtype: object) -> ScalarType | None:
    """The scalar type of a NumPy dtype (or dtype-like), or ``None`` if unsupported."""
    try:
        dt = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:
        return None
    return _BY_DTYPE.get(dt)


def parse_type(text: str) -> Type:
    """Parse a printed type: ``f32``, ``array<f32,2>`` or ``local<f64,4x3>``."""
    text = text.strip()
    if text.startswith("local<") and text.endswith(">"):
        elem, dims = text[len("local<") : -1].split(",")
        return LocalType(scalar_by_name(elem.strip()), tuple(int(d) for d in dims.split("x")))
    if text.startswith("array<") and text.endswith(">"):
        elem, ndim = text[len("array<") : -1].split(",")
        return ArrayType(scalar_by_name(elem.strip()), int(ndim))
    return scalar_by_name(text)
