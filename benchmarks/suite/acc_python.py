"""CPython's meaning of the delayed trees the Accelerate-form benchmarks build: each
element evaluated by the user's functions, a fold as ``acc = z; acc = f(acc, x)`` in
order (the ``py`` target and the suite's tiny-size test; the compiled targets fold in
the tree ``offload.acc.plan`` fixes, which rounds differently within the tolerance)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from offload.acc.fold import NO_Z, Fold, FoldSeg
from offload.acc.values import from_items
from offload.delayed import Backpermute, FromFunction, Map, ZipWith


def element(node: Any, idx: tuple[int, ...]) -> Any:
    """The element of ``node`` (an array or one of the supported nodes) at ``idx``."""
    if isinstance(node, Map):
        return node.fn(element(node.x, idx))
    if isinstance(node, ZipWith):
        return node.fn(element(node.x, idx), element(node.y, idx))
    if isinstance(node, Backpermute):
        src = node.ix_fn(*idx)
        return element(node.x, src if isinstance(src, tuple) else (src,))
    if isinstance(node, FromFunction):
        return node.fn(*idx)
    if isinstance(node, Fold):
        return _fold(node.f, node.z, [element(node.a, (*idx, k)) for k in range(node.n)])
    if isinstance(node, FoldSeg):
        lo, hi = int(node.offsets[idx[-1]]), int(node.offsets[idx[-1] + 1])
        return _fold(node.f, node.z, [element(node.a, (*idx[:-1], k)) for k in range(lo, hi)])
    if hasattr(node, "shape") and hasattr(node, "dtype") and not hasattr(node, "sources"):
        return np.asarray(node)[idx]
    raise NotImplementedError(f"no CPython meaning written for {type(node).__name__}")


def _fold(f: Any, z: Any, xs: list[Any]) -> Any:
    acc = xs.pop(0) if z is NO_Z else from_items(z)
    for x in xs:
        acc = f(acc, x)
    return acc


def evaluate(node: Any) -> np.ndarray[Any, Any]:
    """Every element of ``node`` (one result), row-major, as an array of the result's
    dtype (the type NumPy gives the first element; float64/int64 for Python numbers)."""
    shape = tuple(node.shape)
    values = [element(node, idx) for idx in itertools.product(*(range(n) for n in shape))]
    dtype = np.asarray(values[0]).dtype if values else np.float64
    return np.array(values, dtype=dtype).reshape(shape) if math.prod(shape) else np.zeros(shape)
