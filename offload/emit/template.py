"""Small AST templates: ``expr("T(a + b)", T=ctor, a=x, b=y)`` builds an ``ast.expr``.

Templates are Python expressions whose free names are placeholders; each placeholder given
as a keyword is replaced by (a copy of) the AST node passed for it. Names not given stay
names (``np``, ``math``). Building code this way keeps operator precedence right (the tree
carries it, ``ast.unparse`` parenthesises) while staying as readable as the text it makes.
"""

from __future__ import annotations

import ast
import copy
import math
from functools import lru_cache

import numpy as np

from offload.ir.types import ScalarType


@lru_cache(maxsize=512)
def _parse(template: str) -> ast.expr:
    return ast.parse(template, mode="eval").body


class _Substitute(ast.NodeTransformer):
    def __init__(self, subs: dict[str, ast.expr]) -> None:
        self.subs = subs

    def visit_Name(self, node: ast.Name) -> ast.expr:
        sub = self.subs.get(node.id)
        return copy.deepcopy(sub) if sub is not None else node


def expr(template: str, **subs: ast.expr) -> ast.expr:
    """The expression ``template`` with each placeholder name replaced by ``subs[name]``."""
    tree = copy.deepcopy(_parse(template))
    out = _Substitute(subs).visit(tree)
    assert isinstance(out, ast.expr)
    return out


def name(ident: str) -> ast.Name:
    """A load of the variable ``ident``."""
    return ast.Name(ident, ast.Load())


def assign(target: str | list[str], value: ast.expr) -> ast.Assign:
    """``target = value``; a list of targets makes a parallel tuple assignment."""
    if isinstance(target, str):
        tgt: ast.expr = ast.Name(target, ast.Store())
    else:
        tgt = ast.Tuple([ast.Name(t, ast.Store()) for t in target], ast.Store())
    return ast.Assign([tgt], value, lineno=0)


def ctor(t: ScalarType) -> ast.expr:
    """The NumPy scalar constructor of ``t`` (``np.float32``); numba types the result as ``t``."""
    return ast.Attribute(name("np"), t.dtype.name if not t.is_bool else "bool_", ast.Load())


def const(value: bool | int | float, t: ScalarType) -> ast.expr:
    """A constant of IR type ``t`` whose numba type is exactly ``t``.

    Ints and floats go through the type's constructor (a bare literal would be typed int64 or
    float64 by numba); non-finite floats are spelled ``math.inf``/``math.nan`` because
    ``ast.unparse`` has no literal for them.
    """
    if t.is_bool:
        return ast.Constant(bool(value))
    if t.is_int:
        v = int(np.array(value).astype(t.dtype))  # the in-range value of that width
        return ast.Call(ctor(t), [ast.Constant(v)], [])
    f = float(value)
    if math.isnan(f):
        lit: ast.expr = expr("math.nan")
    elif f in (float("inf"), float("-inf")):
        lit = expr("math.inf" if f > 0 else "-math.inf")
    else:
        lit = ast.Constant(f)
    return ast.Call(ctor(t), [lit], [])


def wrap(e: ast.expr, t: ScalarType) -> ast.expr:
    """``e`` converted back to ``t``: numba widens small-int arithmetic to int64, so every
    integer result is cast back to its IR width (which also gives the wrap-around)."""
    if t.is_int:
        return ast.Call(ctor(t), [e], [])
    return e
