"""Python-loop references for the scan, permute and filter skeletons, and the combine
functions the tests use (defined in a file: offload compiles from source)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def add(a: Any, b: Any) -> Any:
    return a + b


def bitor(a: Any, b: Any) -> Any:
    return a | b


def matmul2(a: Any, b: Any) -> Any:
    """2x2 matrix product on row-major 4-tuples: associative, not commutative."""
    a0, a1, a2, a3 = a
    b0, b1, b2, b3 = b
    return (a0 * b0 + a1 * b2, a0 * b1 + a1 * b3, a2 * b0 + a3 * b2, a2 * b1 + a3 * b3)


def max_first_nan(a: Any, b: Any) -> Any:
    """max that keeps the first NaN it meets."""
    return a if (a != a or a >= b) else b  # noqa: PLR0124


def _rows(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return a.reshape(int(np.prod(a.shape[:-1])), a.shape[-1])


def ref_scan(
    f: Callable[..., Any],
    z: Any,
    xs: list[np.ndarray[Any, Any]],
    right: bool = False,
) -> list[np.ndarray[Any, Any]]:
    """scanl/scanl1 (``z is None``) or scanr/scanr1 of the innermost axis of the
    components ``xs``, by Python loops over NumPy scalars (wrapping like the kernels)."""
    m = len(xs)
    lead, n = xs[0].shape[:-1], xs[0].shape[-1]
    rows = [_rows(x) for x in xs]
    length = n + (z is not None)
    outs = [np.empty((rows[0].shape[0], length), x.dtype) for x in xs]
    zt = None if z is None else (z if isinstance(z, tuple) else (z,))
    with np.errstate(all="ignore"):
        for r in range(rows[0].shape[0]):
            order = range(n - 1, -1, -1) if right else range(n)
            acc = None
            seq = []
            if zt is not None:
                acc = tuple(x.dtype.type(v) for x, v in zip(xs, zt, strict=True))
                seq.append(acc)
            for j in order:
                v = tuple(row[r, j] for row in rows)
                if acc is None:
                    acc = v
                else:
                    args = (v, acc) if right else (acc, v)
                    if m == 1:
                        res = (f(args[0][0], args[1][0]),)
                    else:
                        res = tuple(f(args[0], args[1]))
                    acc = tuple(x.dtype.type(c) for x, c in zip(xs, res, strict=True))
                seq.append(acc)
            if right:
                seq.reverse()
            for k, o in enumerate(outs):
                o[r, :] = [s[k] for s in seq]
    return [o.reshape(*lead, length) for o in outs]


def ref_seg_scan(
    f: Callable[..., Any], z: Any, x: np.ndarray[Any, Any], seg: np.ndarray[Any, Any]
) -> np.ndarray[Any, Any]:
    """scanl_seg / scanl1_seg (``z is None``) of a single-component array."""
    parts = []
    start = 0
    for length in seg:
        piece = x[..., start : start + int(length)]
        parts.append(ref_scan(f, z, [piece])[0])
        start += int(length)
    if not parts:
        return np.empty((*x.shape[:-1], 0), x.dtype)
    return np.concatenate(parts, axis=-1)


def ref_permute(
    f: Callable[..., Any],
    defaults: np.ndarray[Any, Any],
    ix: Callable[..., Any],
    a: np.ndarray[Any, Any],
    ignore: int,
) -> np.ndarray[Any, Any]:
    """``out = defaults.copy(); out[ix(i)] = f(a[i], out[ix(i)])`` in source order."""
    out = defaults.copy()
    with np.errstate(all="ignore"):
        for i in np.ndindex(a.shape):
            d = ix(*i)
            d = d if isinstance(d, tuple) else (d,)
            if any(int(c) == ignore for c in d):
                continue
            d = tuple(int(c) for c in d)
            out[d] = out.dtype.type(f(a[i], out[d]))
    return out


def later(new: Any, old: Any) -> Any:
    """A combine that is not commutative: the order of arrival shows in the bits."""
    return old * 0.5 + new


def every_scan_form(a: np.ndarray[Any, Any]) -> list[tuple[Any, np.ndarray[Any, Any]]]:
    """Each scan form of ``add`` over ``a`` (its innermost axis) with its Python-loop
    result: ``scanl``, ``scanl1``, ``scanr``, ``scanr1`` and the ``_total`` forms' items."""
    from offload.acc import scan as S

    n = a.shape[-1]
    lz, rz = ref_scan(add, 0, [a])[0], ref_scan(add, 0, [a], right=True)[0]
    return [
        (S.scanl(add, 0, a), lz),
        (S.scanl1(add, a), ref_scan(add, None, [a])[0]),
        (S.scanr(add, 0, a), rz),
        (S.scanr1(add, a), ref_scan(add, None, [a], right=True)[0]),
        (S.scanl_total(add, 0, a)[1], lz[..., n]),
        (S.scanr_total(add, 0, a)[0], rz[..., 1:]),
    ]
