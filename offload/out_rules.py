"""The rules of ``dtype=`` and ``out=`` (NumPy's ufunc ``out=``): which dtypes a call
computes, the checks on ``out=`` arrays, and the copy of a staged result into one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from offload.backend import Backend
from offload.frontend.captures import array_dtype
from offload.ir.types import ScalarType


def wanted_dtypes(
    dtype: Any, out: Any, results: Sequence[ScalarType | np.dtype[Any]]
) -> tuple[np.dtype[Any], ...] | None:
    """The result dtypes ``dtype=``/``out=`` ask for (``None``: the function's own), where
    ``results`` are the function's own (IR types or NumPy dtypes).

    ``out=`` follows NumPy's ufunc ``out=``: each array must be writeable, and the result
    (of ``dtype=`` where given) must cast to its dtype under the ``same_kind`` rule."""
    nresults = len(results)
    dts: Sequence[Any] | None = None
    if dtype is not None:
        dts = dtype if isinstance(dtype, tuple | list) else (dtype,) * nresults
        if len(dts) != nresults:
            raise ValueError(
                f"dtype= names {len(dts)} dtype(s) but the function returns {nresults}"
            )
    if out is None:
        return None if dts is None else tuple(np.dtype(d) for d in dts)
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        if not (hasattr(o, "shape") and hasattr(o, "dtype")):
            raise TypeError(f"out= takes an array (or a tuple of arrays), not {type(o).__name__}")
    if len(outs) != nresults:
        raise ValueError(f"out= has {len(outs)} array(s) but the function returns {nresults}")
    if dts is None:
        froms = [r if isinstance(r, np.dtype) else r.dtype for r in results]
    else:
        froms = [np.dtype(d) for d in dts]
    dtypes = [array_dtype(o) for o in outs]  # (torch's and JAX's dtypes are their own)
    for k, (o, natural, dt) in enumerate(zip(outs, froms, dtypes, strict=True)):
        which = "out=" if nresults == 1 else f"out=[{k}]"
        if read_only(o):
            raise ValueError(f"{which} is read-only: compute_* writes its result into it")
        if not np.can_cast(natural, dt, casting="same_kind"):
            raise TypeError(
                f"cannot cast the result{'' if nresults == 1 else f' {k}'} from "
                f"dtype('{natural}') to {which}'s dtype('{dt}') with casting rule "
                f"'same_kind' (NumPy's rule for out=); pass dtype=np.{dt} to convert explicitly"
            )
    return tuple(dtypes)


def read_only(o: Any) -> bool:
    """Whether an ``out=`` array says it is read-only (NumPy's flag, or the read-only bit
    of ``__array_interface__``/``__cuda_array_interface__``'s ``data``)."""
    if isinstance(o, np.ndarray):
        return not o.flags.writeable
    for name in ("__cuda_array_interface__", "__array_interface__"):
        iface = getattr(o, name, None)
        if isinstance(iface, dict):
            data = iface.get("data")
            return isinstance(data, tuple) and len(data) == 2 and bool(data[1])
    return False


def converts_twice(dtype: Any, out: Any) -> bool:
    """Whether ``dtype=`` names another dtype than an ``out=`` array's: the value is then
    converted to ``dtype`` first, then to ``out``'s dtype (as NumPy's ``.astype(dtype)``
    followed by a store), which one conversion to ``out``'s dtype would not give (0.7
    through int64 into float64 is 0.0)."""
    outs = out if isinstance(out, tuple) else (out,)
    dts = dtype if isinstance(dtype, tuple | list) else (dtype,) * len(outs)
    if len(dts) != len(outs) or not all(hasattr(o, "dtype") for o in outs):
        return False  # (``wanted_dtypes`` reports the mismatch)
    return any(np.dtype(d) != array_dtype(o) for d, o in zip(dts, outs, strict=True))


def outputs(
    backend: Backend, shape: tuple[int, ...], dtypes: Sequence[np.dtype[Any]], out: Any
) -> list[Any]:
    if out is None:
        return backend.allocate(shape, dtypes)
    outs = list(out) if isinstance(out, tuple) else [out]
    for o in outs:
        if tuple(o.shape) != shape:
            raise ValueError(f"out= has shape {tuple(o.shape)}, expected {shape}")
    return outs


def copy_into(out: Any, result: Any) -> None:
    """Copy a staged result into the user's ``out=`` array (host or device; a host array
    known by its interface or DLPack is written through a NumPy view of its memory)."""
    if not isinstance(out, np.ndarray) and not hasattr(out, "__cuda_array_interface__"):
        if hasattr(out, "__array_interface__"):
            out = np.asarray(out)
        elif hasattr(out, "__dlpack__"):
            out = np.from_dlpack(out)
    if isinstance(out, np.ndarray):
        host = (
            result.get()
            if hasattr(result, "get") and not isinstance(result, np.ndarray)
            else result
        )
        np.copyto(out, host, casting="unsafe")
    else:
        out[...] = result
