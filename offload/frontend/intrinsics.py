"""The table of callables and module constants an element function may use.

Both the restriction analysis (is this call allowed?) and the lowering (how is it lowered?)
read this one table, keyed on the Python object the name resolves to.
"""

from __future__ import annotations

import builtins
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.ir.ops import MATH_FUNCTIONS


@dataclass(frozen=True)
class Intrinsic:
    """An allowed callable: ``kind`` says how it is lowered, ``name`` which one."""

    kind: str
    """``builtin`` (min, max, abs, int, float, bool, round, len, range), ``local`` (np.zeros
    and the other makers of local arrays), ``math``
    (math.* -> weak f64 result, Python semantics), ``ufunc`` (np.* -> keeps the strong float
    type), ``dtype`` (np.float32(x) and friends: a strong cast), ``reduce`` (np.sum and
    friends over a view: frontend/reductions.py), ``typeinfo`` (np.finfo/np.iinfo: a
    compile-time object, frontend/typeinfo.py), ``isclose`` (np.isclose of scalars,
    frontend/isclose.py)."""
    name: str
    """Builtin name, MATH_FUNCTIONS name, or dtype name (``float32``)."""
    arity: tuple[int, int] = (1, 1)
    """Allowed (min, max) number of positional arguments."""


INTRINSICS: dict[int, Intrinsic] = {}
"""id(python object) -> Intrinsic (ids of module-level singletons are stable)."""
_KEEP: list[Any] = []  # keeps the keyed objects alive so that their ids stay theirs


def _add(obj: Any, intrinsic: Intrinsic) -> None:
    INTRINSICS[id(obj)] = intrinsic
    _KEEP.append(obj)


for _name, _arity in {
    "min": (1, 8),
    "max": (1, 8),
    "abs": (1, 1),
    "int": (1, 1),
    "float": (1, 1),
    "bool": (1, 1),
    "round": (1, 2),
    "len": (1, 1),
    "range": (1, 3),
    "divmod": (2, 2),
    "pow": (2, 2),
    # iteration helpers, allowed in a for loop's header only (frontend/loops.py)
    "zip": (1, 8),
    "enumerate": (1, 2),
    "reversed": (1, 1),
    "sum": (1, 2),  # of a view, an elementwise expression or a tuple (reductions.py)
}.items():
    _add(getattr(builtins, _name), Intrinsic("builtin", _name, _arity))

# math.<name> -> IR math function (same name unless noted)
_MATH = {n: n for n in MATH_FUNCTIONS if hasattr(math, n) and n != "rint"}
for _n in ("floor", "ceil", "trunc"):
    _MATH.pop(_n, None)  # math.floor/ceil/trunc return Python ints: lowered as builtins
for _n, _ir in _MATH.items():
    _add(getattr(math, _n), Intrinsic("math", _ir, (MATH_FUNCTIONS[_ir],) * 2))
_add(math.floor, Intrinsic("builtin", "math.floor"))
_add(math.ceil, Intrinsic("builtin", "math.ceil"))
_add(math.trunc, Intrinsic("builtin", "math.trunc"))
_add(math.pow, Intrinsic("math", "pow", (2, 2)))

# numpy ufuncs -> IR math function
_UFUNCS = {
    "sqrt": "sqrt", "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log",
    "log2": "log2", "log10": "log10", "log1p": "log1p", "sin": "sin", "cos": "cos",
    "tan": "tan", "arcsin": "asin", "arccos": "acos", "arctan": "atan", "sinh": "sinh",
    "cosh": "cosh", "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh",
    "arctanh": "atanh", "fabs": "fabs", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "rint": "rint", "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite",
    "arctan2": "atan2", "hypot": "hypot", "copysign": "copysign", "fmod": "fmod",
}  # fmt: skip
for _n, _ir in _UFUNCS.items():
    _add(getattr(np, _n), Intrinsic("ufunc", _ir, (MATH_FUNCTIONS[_ir],) * 2))
for _n in ("abs", "absolute", "minimum", "maximum", "where", "power", "floor_divide",
           "remainder", "mod", "negative", "square", "sign"):  # fmt: skip
    _add(getattr(np, _n), Intrinsic("ufunc", _n, (3, 3) if _n == "where" else (1, 2)))

LIBRARY_UFUNCS: dict[str, int] = {
    "add": 2, "subtract": 2, "multiply": 2, "divide": 2, "true_divide": 2, "left_shift": 2,
    "right_shift": 2, "bitwise_and": 2, "bitwise_or": 2, "bitwise_xor": 2, "equal": 2,
    "not_equal": 2, "less": 2, "less_equal": 2, "greater": 2, "greater_equal": 2,
    "logical_and": 2, "logical_or": 2, "logical_xor": 2, "logical_not": 1, "invert": 1,
    "positive": 1, "reciprocal": 1, "signbit": 1, "deg2rad": 1, "radians": 1, "rad2deg": 1,
    "degrees": 1, "round": 1, "around": 1, "bitwise_count": 1, "fmin": 2, "fmax": 2,
    "clip": 3,
}  # fmt: skip
"""NumPy functions (``np.<name>`` -> arity) lowered to the IR's own ops by
``offload/frontend/library.py``."""
for _n, _k in LIBRARY_UFUNCS.items():
    _arity = (1, 2) if _n in ("round", "around") else (_k, _k)  # (decimals: a constant)
    _add(getattr(np, _n), Intrinsic("ufunc", _n, _arity))
_add(np.isclose, Intrinsic("isclose", "isclose", (2, 5)))  # (offload/frontend/isclose.py)
_add(np.finfo, Intrinsic("typeinfo", "finfo"))  # (offload/frontend/typeinfo.py)
_add(np.iinfo, Intrinsic("typeinfo", "iinfo"))
_add(math.degrees, Intrinsic("math", "degrees"))
_add(math.radians, Intrinsic("math", "radians"))

# numpy functions that make a small local array (offload/frontend/local_arrays.py)
for _n in ("zeros", "empty", "ones", "full", "array"):
    _add(getattr(np, _n), Intrinsic("local", _n, (1, 3)))

# numpy scalar types used as conversions: np.float32(x)
for _n in ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
           "uint64", "float32", "float64"):  # fmt: skip
    _add(getattr(np, _n), Intrinsic("dtype", np.dtype(getattr(np, _n)).name))


# reductions over views and elementwise expressions (frontend/reductions.py)
for _obj, _n in (
    (np.sum, "sum"), (np.prod, "prod"), (np.min, "min"), (np.max, "max"), (np.amin, "min"),
    (np.amax, "max"), (np.argmin, "argmin"), (np.argmax, "argmax"), (np.mean, "mean"),
    (np.all, "all"), (np.any, "any"), (np.linalg.norm, "norm"), (np.dot, "dot"),
    (np.count_nonzero, "count_nonzero"), (np.var, "var"), (np.std, "std"),
):  # fmt: skip
    _add(_obj, Intrinsic("reduce", _n, (2, 2) if _n == "dot" else (1, 1)))


MODULE_CONSTANTS: dict[tuple[int, str], float] = {
    (id(math), "pi"): math.pi,
    (id(math), "e"): math.e,
    (id(math), "tau"): math.tau,
    (id(math), "inf"): math.inf,
    (id(math), "nan"): math.nan,
    (id(np), "pi"): float(np.pi),
    (id(np), "e"): float(np.e),
    (id(np), "inf"): float(np.inf),
    (id(np), "nan"): float(np.nan),
}
"""(id(module), attribute) -> value of module constants folded at compile time (weak f64)."""


def lookup_intrinsic(obj: Any) -> Intrinsic | None:
    """The intrinsic ``obj`` is, or ``None``."""
    return INTRINSICS.get(id(obj))
