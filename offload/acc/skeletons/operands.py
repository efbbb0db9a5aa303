"""What the collectives of this package need to know of a source before computing it,
and the small conversions between a user's values and the skeletons' components.

A source is an array (NumPy, CuPy, anything with ``shape`` and ``dtype``), a tuple of
same-shaped arrays (struct of arrays), or a delayed array (``offload.delayed.Delayed``,
a collective included) whose ``dtypes`` may be a tuple.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from offload.acc.base import Context
from offload.acc.combine import ScalarFunction, compile_combine, result_error
from offload.diagnostics import OffloadError, TypeMismatch
from offload.frontend.captures import is_array, plain_shape
from offload.frontend.nodes import ArrayNode

Dt = np.dtype[Any]


def source_dtypes(a: object) -> tuple[Dt, ...]:
    """The leaf dtypes of source ``a``."""
    if isinstance(a, ArrayNode):
        try:
            dts = a.dtypes  # type: ignore[attr-defined]
        except TypeMismatch:
            typed = _typing_view(a)
            if typed is a:
                raise
            dts = typed.dtypes  # type: ignore[attr-defined]
        return tuple(np.dtype(d) for d in dts)
    if isinstance(a, tuple | list):
        if not a:
            raise TypeError("an empty tuple is not an array")
        return tuple(d for x in a for d in source_dtypes(x))
    dt = getattr(a, "dtype", None)
    if dt is None:
        raise TypeError(f"expected an array or a delayed array, not {type(a).__name__}")
    return (np.dtype(dt),)


def _typing_view(node: object) -> object:
    """``node`` with every leaf offload cannot read itself but that has a ``shape`` and a
    ``dtype`` (a Dask array: ``offload.dask`` computes such trees block by block) replaced
    by a NumPy stand-in of that shape and dtype over one element, for the dtypes alone;
    ``node`` itself where there is none. Computing such a tree directly still fails in
    the lowering, located."""
    if not isinstance(node, ArrayNode):
        if is_array(node) or not (hasattr(node, "shape") and hasattr(node, "dtype")):
            return node
        return np.broadcast_to(np.zeros((), dtype=node.dtype), tuple(node.shape))  # type: ignore[attr-defined]
    changed = {}
    for attr, src in node.sources():
        new = _typing_view(src)
        if new is not src:
            changed[attr] = new
    if not changed or not dataclasses.is_dataclass(node):
        return node
    rebuilt: object = dataclasses.replace(node, **changed)  # type: ignore[type-var]
    return rebuilt


def source_shape(a: object) -> tuple[int, ...]:
    """The shape of source ``a`` (a tuple's arrays must agree)."""
    fast = plain_shape(a)
    if fast is not None:
        return fast
    if isinstance(a, tuple | list):
        shapes = {source_shape(x) for x in a}
        if len(shapes) != 1:
            raise ValueError(f"the arrays of a tuple source differ in shape: {sorted(shapes)}")
        return shapes.pop()
    shape = getattr(a, "shape", None)
    if shape is None:
        raise TypeError(f"expected an array or a delayed array, not {type(a).__name__}")
    return tuple(int(n) for n in shape)


def components(value: Any) -> list[Any]:
    """A computed source (an array or a tuple of arrays) as its list of arrays."""
    if isinstance(value, tuple | list):
        return [c for v in value for c in components(v)]
    return [value]


def pack(arrays: Sequence[Any]) -> Any:
    """One array, or a tuple of arrays (struct of arrays) for several components."""
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


def neutral(z: object, dts: tuple[Dt, ...], what: str) -> list[Any]:
    """``z`` as one typed scalar per component (a tuple ``z`` for a tuple source)."""
    items = list(z) if isinstance(z, tuple | list) else [z]
    if len(items) != len(dts):
        raise TypeMismatch(
            f"{what}: the neutral element has {len(items)} component(s) but the array has "
            f"{len(dts)}"
        )
    out: list[Any] = []
    for v, dt in zip(items, dts, strict=True):
        if not isinstance(v, bool | int | float | np.generic):
            raise TypeError(f"{what}: a neutral element is a number, not {type(v).__name__}")
        if dt.kind in "iu" and isinstance(v, float | np.floating):
            raise TypeMismatch(f"{what}: the neutral element {v!r} is a float, the array {dt}")
        if dt.kind in "iu" and not np.iinfo(dt).min <= int(v) <= np.iinfo(dt).max:
            raise ValueError(f"{what}: the neutral element {v!r} does not fit {dt}")
        out.append(dt.type(v))
    return out


def python_ints_fit(value: object, a: object, what: str) -> None:
    """``ValueError`` where a Python int of ``value`` (a number or a tuple of numbers, as
    given) does not fit the integer dtype of ``a``'s component it meets: NumPy 2 raises
    for ``np.int8(1) + 300`` (NEP 50), where a kernel would wrap. Other values pass."""
    items = leaves(value)
    if not any(type(v) is int and not 0 <= v <= 127 for v in items):
        return  # (fits every integer dtype: no dtypes to look up)
    dts = source_dtypes(a)
    if len(dts) != len(items):
        return  # (the component count is checked where the value is used)
    for v, dt in zip(items, dts, strict=True):
        if type(v) is int and dt.kind in "iu" and not np.iinfo(dt).min <= v <= np.iinfo(dt).max:
            raise ValueError(f"{what} {v} does not fit {dt} (Python integer out of bounds)")


def leaves(value: object) -> list[object]:
    """The numbers of ``value`` (a number, or nested tuples or lists of numbers)."""
    if isinstance(value, tuple | list):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]


def combine_for(f: Callable[..., Any], dts: tuple[Dt, ...], what: str) -> ScalarFunction:
    """``f(a, b)`` compiled for operands of ``dts`` (tuples for several components), its
    results checked against them: the same count, each castable within its kind."""
    operands = (dts, dts)
    sf = compile_combine(f, operands, "ol_comb", what)
    got = sf.result_dtypes
    if len(got) != len(dts):
        raise result_error(
            f,
            f"{what} returns {len(got)} value(s) for operands of {len(dts)} component(s): "
            "a combine function returns a value of its operands' type",
        )
    for r, d in zip(got, dts, strict=True):
        if not np.can_cast(r, d, "same_kind") and not (r.kind in "iub" and d.kind in "iub"):
            raise result_error(
                f,
                f"{what} returns {r} for operands of {d}: a combine function returns a "
                "value of its operands' type",
            )
    return sf


def target_of(ctx: Context) -> str:
    """The skeleton target of ``ctx``: ``cpu-seq``, ``cpu-par``, ``gpu`` or ``gpu-sim``."""
    name = str(ctx.backend.name)
    if name in ("cpu-seq", "cpu-par", "gpu-sim"):
        return name
    if name.startswith("gpu"):
        return "gpu"
    raise OffloadError(f"collectives do not run on the target {name!r}")


def check_determinism(ctx: Context) -> str:
    mode = ctx.determinism
    if mode not in ("deterministic", "cross_target", "fast"):
        raise ValueError(
            f"determinism must be 'deterministic', 'cross_target' or 'fast', not {mode!r}"
        )
    return mode
