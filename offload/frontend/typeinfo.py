"""``np.finfo(t)`` and ``np.iinfo(t)`` in element functions: compile-time objects whose
numeric attributes are constants of the types NumPy gives them (``np.finfo(np.float32).eps``
is a float32, ``np.iinfo(np.int32).max`` a Python int).

``t`` is what NumPy accepts and the compiler knows: a scalar type (``np.float32``, ``float``),
a dtype or its name, a captured array's ``.dtype``, or a number (its type).
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from offload.diagnostics import TypeMismatch
from offload.frontend.core import LoweringCore
from offload.frontend.values import PyObj, Scalar, Val, describe
from offload.ir.types import BOOL, F64, I64, scalar_of_dtype

_MAKERS = {"finfo": np.finfo, "iinfo": np.iinfo}


def make(core: LoweringCore, name: str, arg: Val, node: ast.Call) -> PyObj:
    """``np.<name>(arg)`` (``name``: ``finfo`` or ``iinfo``) as a compile-time object."""
    what: Any
    if isinstance(arg, Scalar):
        what = arg.type.dtype if not arg.weak else {BOOL: bool, I64: int, F64: float}[arg.type]
    elif isinstance(arg, PyObj):
        what = arg.obj
    else:
        raise core.error(
            TypeMismatch,
            f"np.{name}() of a {describe(arg)} is not supported here",
            node,
            hint=f"pass a type such as np.float32, or an array's .dtype: np.{name}(x.dtype)",
        )
    try:
        info = _MAKERS[name](what)
    except (TypeError, ValueError) as err:
        raise core.error(TypeMismatch, f"np.{name}({_spell(what)}): {err}", node) from None
    return PyObj(info, None, f"np.{name}({info.dtype})")


def is_info(obj: object) -> bool:
    """Whether ``obj`` is an ``np.finfo``/``np.iinfo`` object (made by ``make``)."""
    return isinstance(obj, np.finfo | np.iinfo)


def attribute(core: LoweringCore, base: PyObj, attr: str, node: ast.AST) -> Val:
    """``np.finfo(t).<attr>``: a constant of NumPy's type for it (``.dtype``: the dtype)."""
    try:
        value = getattr(base.obj, attr)
    except AttributeError:
        raise core.error(TypeMismatch, f"'{base.name}' has no attribute '{attr}'", node) from None
    if isinstance(value, np.dtype):
        return PyObj(value, None, f"{base.name}.{attr}")
    if type(value) in (bool, int, float):
        key = {bool: BOOL, int: I64, float: F64}[type(value)]
        return core.const(value, (key, True))
    if isinstance(value, np.generic):
        t = scalar_of_dtype(value.dtype)
        if t is not None:
            return core.const(value.item(), (t, False))
    raise core.error(
        TypeMismatch, f"'{base.name}.{attr}' is a {type(value).__name__}, not a number", node
    )


def _spell(what: object) -> str:
    return getattr(what, "__name__", None) or repr(what)
