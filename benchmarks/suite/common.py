"""The interface every benchmark implements, plus helpers shared by the suite.

A benchmark is written once as plain element functions and run unchanged through any
``compute`` callable with the signature of ``offload.compute_{s,p,g}``:
``compute(shape, fn, *, dtype=None, out=None)``. :func:`python_compute` is such a callable
that runs the element function with CPython at every index; the tests use it as the
executable specification of what the element functions mean.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

PEAK_FLOPS = 60e12
"""Measured-class FP32 non-tensor rate of the H100 (SPEC §0)."""
PEAK_FLOPS_DATASHEET = 67e12
PEAK_BYTES = 3.0e12
"""Measured copy bandwidth of the H100 (SPEC §0)."""

Outputs = tuple[Any, ...]
"""What a benchmark run returns: one array per output (host or device arrays)."""


class Compute(Protocol):
    """``offload.compute_s``/``compute_p``/``compute_g`` or :func:`python_compute`."""

    def __call__(
        self, shape: tuple[int, ...], fn: Callable[..., Any], *, dtype: Any = None, out: Any = None
    ) -> Any: ...


@dataclass(frozen=True)
class Check:
    """The outcome of a validation: ``ok`` and a one-line ``detail`` (errors, checksums)."""

    ok: bool
    detail: str


@dataclass
class Bound:
    """A benchmark's element functions bound to one set of inputs (created once, so that a
    warm ``compute_*`` call finds the same function objects and takes its fast path)."""

    run: Callable[[Compute], Outputs]
    """All iterations of the timed region; returns the final outputs."""
    extra: Callable[[Compute], Check] | None = None
    """An additional, untimed correctness check (e.g. 2d-convolution's random 1-pass test)."""
    state: dict[str, Any] = field(default_factory=dict)


class Benchmark:
    """Base class: subclasses set the class attributes and override the methods."""

    name: str = ""
    kind: str = "1"
    """``R`` (recompute), ``F`` (feedback, ping-pong) or ``1`` (a single evaluation)."""
    bound_by: str = "memory"
    sizes: dict[str, Any] = {}
    """``tiny`` (CPython-evaluable), ``quick`` (seconds on 2 CPU cores), ``paper`` (SPEC)."""
    notes: str = ""
    form: str = "element"
    """``element``: ``bind`` runs element functions (``compute(shape, fn)``); ``collective``:
    it computes a delayed/collective tree (``compute(node)``), which the numba peers (loops
    over element functions) do not apply to."""

    def iters(self, params: Any) -> int:
        """Iterations in the timed region."""
        return int(getattr(params, "iters", 1))

    def make_inputs(self, params: Any, rng: np.random.Generator | None = None) -> dict[str, Any]:
        """Host inputs (NumPy); SPEC's seeds unless ``rng`` is given."""
        raise NotImplementedError

    def bind(self, inputs: dict[str, Any]) -> Bound:
        """Create the element functions over ``inputs`` (arrays may be device arrays)."""
        raise NotImplementedError

    def run(self, compute: Compute, inputs: dict[str, Any]) -> Outputs:
        """One timed region (all iterations) through ``compute``."""
        return self.bind(inputs).run(compute)

    def reference(self, inputs: dict[str, Any]) -> Outputs:
        """NumPy reference outputs (float64 where SPEC says ``ref64``)."""
        raise NotImplementedError

    def validate(self, outputs: Outputs, ref: Outputs, inputs: dict[str, Any]) -> Check:
        """SPEC's validation rule."""
        raise NotImplementedError

    def flops(self, params: Any) -> float:
        """FLOPs per iteration (SPEC's counting rules)."""
        raise NotImplementedError

    def bytes(self, params: Any) -> float:
        """Compulsory DRAM bytes per iteration."""
        raise NotImplementedError

    def floor(self, params: Any) -> float:
        """Roofline floor per iteration in seconds on the H100."""
        return max(self.flops(params) / PEAK_FLOPS, self.bytes(params) / PEAK_BYTES)


def to_host(x: Any) -> np.ndarray[Any, Any]:
    """A NumPy view/copy of a host, managed or CuPy array."""
    if hasattr(x, "get") and not isinstance(x, np.ndarray):
        return np.asarray(x.get())
    return np.asarray(x)


def hosts(outputs: Outputs) -> tuple[np.ndarray[Any, Any], ...]:
    """:func:`to_host` over every output."""
    return tuple(to_host(o) for o in outputs)


def as_tuple(result: Any) -> Outputs:
    """``compute`` returns an array or a tuple of arrays; always give a tuple."""
    return tuple(result) if isinstance(result, tuple) else (result,)


def _result_dtype(values: list[Any]) -> np.dtype[Any]:
    """NEP 50 promotion over every returned value (Python scalars are weak)."""
    strong: dict[str, Any] = {}
    weak: list[Any] = []
    for v in values:
        if isinstance(v, np.generic):
            strong[v.dtype.str] = v.dtype
        elif isinstance(v, bool):
            strong["bool"] = np.dtype(bool)
        else:
            weak.append(v)
    operands = list(strong.values())
    if not operands:
        return np.result_type(*{type(w): w for w in weak}.values())
    # one representative weak value per Python type is enough for promotion
    return np.result_type(*operands, *{type(w): w for w in weak}.values())


def python_compute(
    shape: tuple[int, ...], fn: Callable[..., Any], *, dtype: Any = None, out: Any = None
) -> Any:
    """Run ``fn`` with CPython at every index of ``shape`` (row-major); the meaning of
    ``compute_*``: a tuple return gives a tuple of arrays, ``dtype`` overrides, ``out``
    (an array or a tuple of arrays) is filled and returned."""
    values = [fn(*idx) for idx in itertools.product(*(range(n) for n in shape))]
    is_tuple = bool(values) and isinstance(values[0], tuple)
    columns = list(zip(*values, strict=True)) if is_tuple else [values]
    if is_tuple and not values:
        raise ValueError("empty shape with tuple results")
    outs = list(out) if isinstance(out, tuple) else ([out] if out is not None else [])
    results = []
    for k, col in enumerate(columns):
        dt = np.dtype(dtype) if dtype is not None else _result_dtype(list(col))
        arr = np.array([dt.type(c) for c in col], dtype=dt).reshape(shape)
        if outs:
            outs[k][...] = arr
            results.append(outs[k])
        else:
            results.append(arr)
    return tuple(results) if is_tuple else results[0]


def rel_err_check(
    name: str,
    got: np.ndarray[Any, Any],
    ref: np.ndarray[Any, Any],
    scale: np.ndarray[Any, Any] | float,
    tol: float,
) -> Check:
    """``|got - ref| <= tol * scale`` elementwise (scale broadcasts)."""
    err = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    bound = tol * np.asarray(scale, dtype=np.float64)
    bad = err > bound
    worst = float(np.max(err / np.maximum(bound, 1e-300))) if err.size else 0.0
    if np.any(~np.isfinite(got)):
        return Check(False, f"{name}: non-finite values")
    return Check(not bool(np.any(bad)), f"{name}: {int(np.sum(bad))} bad, worst {worst:.3g} of tol")


def combine(*checks: Check) -> Check:
    """All checks must pass; details joined."""
    return Check(all(c.ok for c in checks), "; ".join(c.detail for c in checks))


def recompute(
    compute: Compute,
    shape: tuple[int, ...],
    fn: Callable[..., Any],
    iters: int,
    dtype: Any = None,
) -> Outputs:
    """(R): ``iters`` evaluations of the same output; the first allocates, the rest write
    into it with ``out=`` (the ninja-gap harness' "iteratively re-compute the result")."""
    out = as_tuple(compute(shape, fn, dtype=dtype))
    for _ in range(iters - 1):
        compute(shape, fn, dtype=dtype, out=out if len(out) > 1 else out[0])
    return out


def pingpong(
    compute: Compute,
    shape: tuple[int, ...],
    fn: Callable[..., Any],
    set_src: Callable[[Any], None],
    first: Any,
    iters: int,
    bufs: list[Any],
    dtype: Any = None,
) -> Any:
    """(F): iteration k reads what iteration k-1 wrote. ``set_src`` rebinds the array the
    element function captures; two buffers (kept in ``bufs`` across runs, allocated by the
    target on first use) alternate, so steady-state iterations allocate nothing."""
    set_src(first)
    res = first
    for it in range(iters):
        slot = it % 2
        if len(bufs) > slot:
            compute(shape, fn, dtype=dtype, out=bufs[slot])
            res = bufs[slot]
        else:
            res = compute(shape, fn, dtype=dtype)
            bufs.append(res)
        set_src(res)
    return res
