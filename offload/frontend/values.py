"""What an expression means while it is lowered: the frontend's compile-time values.

A Python expression inside an element function denotes one of:

* ``Scalar``: an IR value plus its NEP 50 *weakness* (a Python int/float/bool is weak, a
  NumPy scalar strong) and a few static facts (a known constant, known non-negative);
* ``TupleVal``: a fixed-size tuple, never an IR value (tuples are flattened);
* ``ArrayRef``: a captured array (an IR parameter of array type);
* ``PyObj``: a Python object resolved at compile time (a module, a helper function, an
  intrinsic), with the path that re-reads it at call time when it has one;
* ``Getter``: the element getter a ``traverse`` function receives;
* ``View``: a read-only view of a captured array (``a[i]``, ``a[:, j]``, ``a[i, 2:5]``):
  an affine index map, never a copy (views.py);
* ``Elementwise``: an elementwise expression of views and scalars (``a[i, :] - c``),
  computed element by element where it is read or reduced (views.py, reductions.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from offload.ir.core import Value
from offload.ir.types import ArrayType, LocalType, ScalarType

Step = tuple[str, object]
"""One step of a capture path: ``("closure", k)``, ``("global", name)``, ``("attr", name)``,
``("item", k)`` (of a tuple), ``("length_is", n)`` (a tuple's length guard) or
``("const", obj)``."""


@dataclass(frozen=True, eq=False)
class Scalar:
    """A scalar IR value with its NEP 50 weakness and static facts."""

    value: Value
    weak: bool
    """True for Python int/float/bool (they adapt to the other operand's type)."""
    const: bool | int | float | None = None
    """The compile-time value when the scalar is a literal (for folding tests and steps)."""
    nonneg: bool = False
    """Trivially known to be >= 0 (index parameters, shapes, non-negative constants)."""

    @property
    def type(self) -> ScalarType:
        t = self.value.type
        assert isinstance(t, ScalarType)
        return t


@dataclass(frozen=True, eq=False)
class TupleVal:
    """A fixed-size tuple of values (flattened into scalars wherever it crosses blocks)."""

    items: tuple[Val, ...]


@dataclass(frozen=True, eq=False)
class ArrayRef:
    """A captured, read-only array."""

    value: Value
    name: str

    @property
    def type(self) -> ArrayType:
        t = self.value.type
        assert isinstance(t, ArrayType)
        return t


@dataclass(frozen=True, eq=False)
class LocalArray:
    """A small local array of the element function (``offload/frontend/local_arrays.py``):
    the ``LOCAL`` op's result, which every name bound to it shares (Python aliasing)."""

    value: Value
    weak: bool
    """True for a Python list (its elements read as Python numbers), False for NumPy's."""
    origin: str
    """How it was made, for messages: ``np.zeros``, ``list``..."""
    once: bool = True
    """Made in the function's entry block (once per element, never again)."""

    @property
    def type(self) -> LocalType:
        t = self.value.type
        assert isinstance(t, LocalType)
        return t


@dataclass(frozen=True, eq=False)
class PyObj:
    """A Python object known at compile time (module, helper, intrinsic, ...)."""

    obj: Any
    path: tuple[Step, ...] | None
    """How to reach ``obj`` from the lowering root at call time (``None``: not needed)."""
    name: str
    """Source-level spelling, for messages."""


@dataclass(frozen=True, eq=False)
class Getter:
    """The element getter of a delayed array (``get(i, j)`` in ``traverse``)."""

    source: object
    """The delayed array (or NumPy array) it reads."""
    path: tuple[Step, ...]
    """Path from the lowering root to ``source``."""


@dataclass(frozen=True, eq=False)
class ViewAxis:
    """One dimension of a view: its element ``k`` is the base array's index
    ``start + k * step`` along the base axis (int64 scalars)."""

    start: Scalar
    step: Scalar
    length: Scalar


@dataclass(frozen=True, eq=False)
class View:
    """A read-only view of a captured array: per base axis either a fixed index (an
    in-bounds, non-negative int64 scalar) or a ``ViewAxis``; the view's dimensions are its
    ``ViewAxis`` entries in order (at least one)."""

    base: ArrayRef
    index: tuple[Scalar | ViewAxis, ...]
    name: str
    """Source-level spelling, for messages."""

    @property
    def axes(self) -> tuple[ViewAxis, ...]:
        return tuple(a for a in self.index if isinstance(a, ViewAxis))


@dataclass(frozen=True, eq=False)
class Elementwise:
    """An elementwise expression of views and scalars, never materialised: ``element``
    lowers the value at one position (one in-range, non-negative int64 scalar per
    dimension) where it is needed."""

    lengths: tuple[Scalar, ...]
    key: tuple[Any, bool]
    """The (ScalarType, weak) of every element."""
    element: Callable[[tuple[Scalar, ...], bool], Scalar]
    """``element(positions, guard)``; with ``guard``, a position past a view operand's own
    length reads outside its array (lengths that differ at run time are an out-of-bounds
    read, as ``bounds_check`` reports one)."""
    uniform: bool = True
    """Whether the operands' lengths are the same values (no guard needed)."""
    reads_local: bool = False
    """Whether an operand is a local array, which the function may write after this
    expression is made: such an expression is computed where it is written (a reduction
    consumes it there, else ``local_arrays.settle`` stores it into a new local array), as
    NumPy computes ``origin - center`` at once, never later where it is read."""


@dataclass(frozen=True, eq=False)
class BoundMethod:
    """A reduction method of an array, a view or an expression (``row.sum``), or a
    conversion method (``.astype``, and a scalar's ``.item``), to call."""

    name: str
    receiver: ArrayRef | View | Elementwise | Scalar


@dataclass(frozen=True)
class Unbound:
    """A local name that is not bound (to one kind of value) on every path reaching here."""

    reason: str = "it is not assigned on every path that reaches this use"


UNBOUND = Unbound()

Val = Scalar | TupleVal | ArrayRef | LocalArray | PyObj | Getter | View | Elementwise | BoundMethod


def flatten(val: Val) -> list[Scalar] | None:
    """The scalar leaves of a scalar or (nested) tuple; ``None`` if it holds anything else."""
    if isinstance(val, Scalar):
        return [val]
    if isinstance(val, TupleVal):
        out: list[Scalar] = []
        for item in val.items:
            leaves = flatten(item)
            if leaves is None:
                return None
            out.extend(leaves)
        return out
    return None


def structure(val: Val) -> object:
    """A hashable shape of a scalar/tuple value: ``"s"`` or a tuple of shapes."""
    if isinstance(val, TupleVal):
        return tuple(structure(item) for item in val.items)
    return "s"


def rebuild(shape: object, leaves: list[Scalar]) -> Val:
    """Inverse of ``flatten`` given ``structure``: consumes ``leaves`` from the front."""
    if shape == "s":
        return leaves.pop(0)
    assert isinstance(shape, tuple)
    return TupleVal(tuple(rebuild(s, leaves) for s in shape))


def describe(val: Val | Unbound) -> str:
    """A short user-facing description of a value's kind (for messages)."""
    if isinstance(val, Scalar):
        return f"{'Python ' if val.weak else ''}{_py_name(val)}"
    if isinstance(val, TupleVal):
        return f"tuple of {len(val.items)}"
    if isinstance(val, ArrayRef):
        return f"captured array of {val.type.elem.dtype} with {val.type.ndim} dimension(s)"
    if isinstance(val, LocalArray):
        kind = "list" if val.weak else "local array"
        return f"{kind} of {val.type.elem.dtype} with shape {val.type.shape}"
    if isinstance(val, PyObj):
        return f"Python object {val.name!r}"
    if isinstance(val, Getter):
        return "getter function"
    if isinstance(val, View):
        return f"view of captured '{val.base.name}' with {len(val.axes)} dimension(s)"
    if isinstance(val, Elementwise):
        return f"elementwise array expression with {len(val.lengths)} dimension(s)"
    if isinstance(val, BoundMethod):
        return f"method '.{val.name}'"
    return "name with no value yet"


def _py_name(val: Scalar) -> str:
    t = val.type
    if not val.weak:
        return str(t.dtype)
    return "bool" if t.is_bool else "int" if t.is_int else "float"
