"""What the interpreter tests of the skeleton collectives share: combine functions (defined
in a file: offload compiles from source), Hypothesis strategies for arrays and segment
descriptors, the determinism mode as a context, and a bit-for-bit comparison."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from hypothesis import strategies as st

import offload as ol

DTYPES = [
    "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float32", "float64",
]  # fmt: skip
TARGETS: dict[str, Callable[..., Any]] = {"cpu-seq": ol.compute_s, "cpu-par": ol.compute_p}
MODES = ["deterministic", "cross_target"]


def add(a: Any, b: Any) -> Any:
    return a + b


def bitor(a: Any, b: Any) -> Any:
    return a | b


def max_first_nan(a: Any, b: Any) -> Any:
    """max that keeps the first NaN it meets (and the first of equal values)."""
    return a if (a != a or a >= b) else b  # noqa: PLR0124


def matmul2(a: Any, b: Any) -> Any:
    """2x2 matrix product on row-major 4-tuples: associative (exactly on integers), not
    commutative."""
    a0, a1, a2, a3 = a
    b0, b1, b2, b3 = b
    return (a0 * b0 + a1 * b2, a0 * b1 + a1 * b3, a2 * b0 + a3 * b2, a2 * b1 + a3 * b3)


def pair_add(a: Any, b: Any) -> Any:
    """Componentwise + of a pair whose components differ in dtype."""
    return (a[0] + b[0], a[1] + b[1])


def later(new: Any, old: Any) -> Any:
    """A permute combine that is not commutative: the order of arrival shows in the bits."""
    return old * 0.5 + new


def values(dtype: str) -> st.SearchStrategy[Any]:
    """Elements of ``dtype``: small and extreme integers (sums wrap), floats with NaN,
    infinities and both zeros."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return st.booleans()
    if dt.kind == "f":
        return st.floats(-8, 8, width=dt.itemsize * 8) | st.sampled_from(
            [math.nan, math.inf, -math.inf, -0.0, 0.0, 0.1]
        )
    info = np.iinfo(dt)
    return st.integers(max(info.min, -100), min(info.max, 100)) | st.sampled_from(
        [int(info.min), int(info.max)]
    )


def array(data: st.DataObject, dtype: str, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    n = math.prod(shape)
    items = data.draw(st.lists(values(dtype), min_size=n, max_size=n))
    return np.array(items, dtype=dtype).reshape(shape)


def segments(data: st.DataObject, n: int) -> np.ndarray[Any, Any]:
    """Segment lengths summing to ``n``: empty segments, one segment, none (``n == 0``)."""
    if n == 0 and data.draw(st.booleans()):
        return np.zeros(0, np.int64)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=5)))
    ends = [0, *cuts, n]
    return np.diff(np.array(ends, np.int64))


@contextlib.contextmanager
def determinism(mode: str) -> Iterator[None]:
    saved = ol.config.determinism
    ol.config.determinism = mode
    try:
        yield
    finally:
        ol.config.determinism = saved


def computed(target: str, node: Any, mode: str) -> Any:
    """``compute_s``/``compute_p`` (by target name) of ``node`` in ``mode``."""
    with determinism(mode):
        return TARGETS[target](node)


def same_bits(got: Any, want: Any) -> bool:
    """Equal dtypes and shapes, NaN in the same places and every other element the same
    bits (zero signs included), component by component for tuples. NaN payloads are not
    compared: IEEE 754 leaves open which operand's payload an op on two NaNs keeps, and
    LLVM commutes ``fadd``'s operands (numba's ``nan1 + nan2`` may return either)."""
    if isinstance(want, tuple) or isinstance(got, tuple):
        return (
            isinstance(got, tuple)
            and isinstance(want, tuple)
            and len(got) == len(want)
            and all(map(same_bits, got, want))
        )
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.kind != "f":
        return got.tobytes() == want.tobytes()
    nan = np.isnan(got)
    return bool((nan == np.isnan(want)).all()) and got[~nan].tobytes() == want[~nan].tobytes()


def scan_nodes(form: str, f: Any, z: Any, a: Any, seg: Any) -> tuple[Any, ...]:
    """The node(s) of the scan ``form``: the two parts of a ``_total`` form, else one."""
    if form in ("scanl1", "scanr1"):
        return (getattr(ol, form)(f, a),)
    if form == "scanl1_seg":
        return (ol.scanl1_seg(f, a, seg),)
    if form == "scanl_seg":
        return (ol.scanl_seg(f, z, a, seg),)
    made = getattr(ol, form)(f, z, a)
    return tuple(made) if form.endswith("_total") else (made,)


def inclusive(f: Any, xs: list[Any], right: bool) -> list[Any]:
    """Inclusive scan by a Python loop (a right scan: ``f(x, acc)`` from the end)."""
    out: list[Any] = []
    with np.errstate(all="ignore"):
        for x in reversed(xs) if right else xs:
            out.append(x if not out else (f(x, out[-1]) if right else f(out[-1], x)))
    return out[::-1] if right else out


def scan_rows(form: str, f: Any, z: Any, row: list[Any], seg: Any) -> list[list[Any]]:
    """``form`` of one row: the list of outputs (two for the ``_total`` forms)."""
    if form.endswith("_seg"):
        out: list[Any] = []
        s = 0
        for k in seg:
            part = row[s : s + k]
            s += k
            out += inclusive(f, [z, *part] if form == "scanl_seg" else part, False)
        return [out]
    right = form.startswith("scanr")
    if form in ("scanl1", "scanr1"):
        return [inclusive(f, row, right)]
    full = inclusive(f, [*row, z] if right else [z, *row], right)
    if form == "scanl_total":
        return [full[:-1], [full[-1]]]
    if form == "scanr_total":
        return [full[1:], [full[0]]]
    return [full]
