"""The 32-bit kernel's launch guard, and the pair of kernels it chooses between.

``GPUBackend`` compiles a function's kernel with 32-bit index arithmetic (the IR narrowed by
``offload.opt.narrow``, counters/extents/strides int32). That kernel computes the same
values as the 64-bit one for every launch where

* each extent of the index space is below ``NARROW_LIMIT`` and their product below 2**31
  (the linear index of an output element fits);
* each captured array's extents are below ``NARROW_LIMIT`` and its farthest element is
  less than 2**31 elements from its base pointer (``sum((n - 1) * |stride|)``), so every
  in-bounds offset fits;
* each captured integer scalar lies in ``[-NARROW_LIMIT, NARROW_LIMIT)``,

which are exactly the assumptions ``narrow`` made. ``fits(shape, captures)`` checks them in
one generated expression (a few hundred nanoseconds on the warm path); an ``IndexGuard`` is
what admits a 32-bit variant of ``offload.ptx.choice`` (else the next variant: at last the
64-bit kernel, compiled the first time a launch needs it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from offload.ir.core import Function
from offload.ir.types import ArrayType, ScalarType
from offload.ptx.passes.narrow import NARROW_LIMIT
from offload.runtime.views import strides_in_elements

Fits = Callable[[tuple[int, ...], Sequence[Any]], bool]

OFFSET_LIMIT = 2**31
"""Offsets (in elements) and linear indices must be below this in the 32-bit kernel."""


def guard_terms(
    fn: Function,
    limit: int = NARROW_LIMIT,
    unit_last: bool = False,
    *,
    extent: Callable[[int, int], str] = lambda k, a: f"caps[{k}][1][{a}]",
    stride: Callable[[int, int], str] = lambda k, a: f"caps[{k}][2][{a}]",
    scalar: Callable[[int], str] = lambda k: f"caps[{k}]",
) -> list[str]:
    """The conditions of ``fits`` as Python expressions over ``shape`` (the index space)
    and, per capture ``k``, ``extent(k, a)``/``stride(k, a)`` (an array's extent and
    element stride along axis ``a``) or ``scalar(k)``; by default the ``caps`` entries
    that ``GPUBackend.prepare_captures`` gives (``offload.ptx.fused`` names its own)."""
    rank = fn.n_index
    terms = [f"shape[{k}] < {limit}" for k in range(rank)]
    if rank > 1:
        terms.append(f"{' * '.join(f'shape[{k}]' for k in range(rank))} < {OFFSET_LIMIT}")
    for k, cap in enumerate(fn.captures):
        t = cap.type
        if isinstance(t, ArrayType):
            terms += [f"{extent(k, a)} < {limit}" for a in range(t.ndim)]
            span = " + ".join(f"({extent(k, a)} - 1) * abs({stride(k, a)})" for a in range(t.ndim))
            if span:
                terms.append(f"{span} < {OFFSET_LIMIT}")
            if unit_last and t.ndim:
                terms.append(f"{stride(k, t.ndim - 1)} == 1")
        elif isinstance(t, ScalarType) and t.is_int:
            terms.append(f"{-limit} <= {scalar(k)} < {limit}")
    return terms


def guard_source(fn: Function, limit: int = NARROW_LIMIT, unit_last: bool = False) -> str:
    """The Python source of ``fits(shape, caps)`` for ``fn``'s kernel. ``caps`` are what
    ``GPUBackend.prepare_captures`` gives: ``(pointer, shape, element strides, owner)``
    tuples for arrays, the values themselves for scalars. With ``unit_last``, also that
    every captured array's last axis has element stride 1 (the unit-stride kernel's
    assumption: C-contiguous arrays and row slices of them)."""
    body = " and ".join(guard_terms(fn, limit, unit_last)) or "True"
    return f"def fits(shape, caps):\n    return bool({body})\n"


def make_guard(fn: Function, limit: int = NARROW_LIMIT, unit_last: bool = False) -> Fits:
    """The compiled ``fits`` of ``guard_source``."""
    namespace: dict[str, Any] = {}
    text = guard_source(fn, limit, unit_last)
    exec(compile(text, f"<offload guard {fn.name}>", "exec"), namespace)
    fits: Fits = namespace["fits"]
    return fits


@dataclass(frozen=True)
class IndexGuard:
    """Admits the launches of a 32-bit kernel of ``fn`` (``unit_last``: that also takes
    captured arrays' last-axis strides to be 1). ``host``: the captures are host arrays
    (the simulator's), not ``prepare_captures``'s tuples."""

    fn: Function
    unit_last: bool
    host: bool = False
    fits: Fits = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fits", make_guard(self.fn, unit_last=self.unit_last))

    def __call__(self, shape: tuple[int, ...], captures: Sequence[Any]) -> bool:
        if not self.host:
            return self.fits(shape, captures)
        caps = [
            (0, c.shape, strides_in_elements(c.strides, c.itemsize))
            if isinstance(c, np.ndarray) and c.ndim
            else c
            for c in captures
        ]
        return self.fits(shape, caps)

    def terms(
        self,
        *,
        extent: Callable[[int, int], str],
        stride: Callable[[int, int], str],
        scalar: Callable[[int], str],
    ) -> list[str]:
        """The guard's conditions over other names (``offload.ptx.fused``)."""
        return guard_terms(
            self.fn, unit_last=self.unit_last, extent=extent, stride=stride, scalar=scalar
        )
