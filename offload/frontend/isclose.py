"""``np.isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False)`` of scalars, as NumPy 2
computes it (``numpy/_core/numeric.py``)::

    y = b as a float (result_type(b, 1.0); a Python int: float(b))
    (abs(a - y) <= atol + rtol * abs(y)) & isfinite(y) | (a == y)
    | isnan(a) & isnan(y)          (equal_nan only)

with NumPy 2's typing of each operation: Python numbers stay weak, NumPy scalars (and
``rtol``/``atol`` given as NumPy values) are strong. ``equal_nan`` is a constant.
"""

from __future__ import annotations

import ast
import math

from offload.diagnostics import TypeMismatch
from offload.frontend.arith import Arith
from offload.frontend.core import LoweringCore
from offload.frontend.values import Scalar
from offload.ir.ops import Opcode
from offload.ir.types import BOOL, F64

KEYWORDS = ("rtol", "atol", "equal_nan")
"""``np.isclose``'s keywords after ``a, b``, in order."""
DEFAULTS = (1e-05, 1e-08, False)


def isclose(core: LoweringCore, arith: Arith, xs: list[Scalar], node: ast.Call) -> Scalar:
    """``np.isclose(*xs)`` (``a, b`` then optionally ``rtol, atol, equal_nan``)."""
    given = xs[2:]
    a, y = xs[0], xs[1]
    rtol, atol = (
        given[k] if k < len(given) else core.const(DEFAULTS[k], (F64, True)) for k in range(2)
    )
    equal_nan = False
    if len(given) == 3:
        flag = given[2]
        if flag.const is None:
            raise core.error(TypeMismatch, "np.isclose's equal_nan must be a constant here", node)
        equal_nan = bool(flag.const)
    if not y.type.is_float:
        y = core.convert(y, F64, y.weak)  # (result_type(y, 1.0) of an int or a bool)
    b = core.b
    diff = arith.unary("abs", arith.binop("sub", a, y, node), node)
    bound = arith.binop(
        "add", atol, arith.binop("mul", rtol, arith.unary("abs", y, node), node), node
    )
    near = arith.compare(Opcode.LE, diff, bound, node).value
    finite = b.binary(Opcode.LT, b.unary(Opcode.ABS, y.value), b.const(math.inf, y.type))
    equal = arith.compare(Opcode.EQ, a, y, node).value
    result = b.binary(Opcode.OR, b.binary(Opcode.AND, near, finite), equal)
    if equal_nan:
        nan_a = b.binary(Opcode.NE, a.value, a.value)
        nan_y = b.binary(Opcode.NE, y.value, y.value)
        result = b.binary(Opcode.OR, result, b.binary(Opcode.AND, nan_a, nan_y))
    assert result.type == BOOL
    return Scalar(result, False)
