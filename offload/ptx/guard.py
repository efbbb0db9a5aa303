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
one generated expression (a few hundred nanoseconds on the warm path); ``GuardedKernel``
launches the 32-bit kernel when it holds and otherwise the 64-bit kernel, compiled the first
time a launch needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from offload.ir.core import Function
from offload.ir.types import ArrayType, ScalarType
from offload.opt.narrow import NARROW_LIMIT

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


def has_unit_variant(fn: Function) -> bool:
    """Whether ``fn`` captures an array, so that a unit-stride kernel differs from the
    general 32-bit one."""
    return any(isinstance(c.type, ArrayType) and c.type.ndim for c in fn.captures)


def make_guard(fn: Function, limit: int = NARROW_LIMIT, unit_last: bool = False) -> Fits:
    """The compiled ``fits`` of ``guard_source``."""
    namespace: dict[str, Any] = {}
    text = guard_source(fn, limit, unit_last)
    exec(compile(text, f"<offload guard {fn.name}>", "exec"), namespace)
    fits: Fits = namespace["fits"]
    return fits


class GuardedKernel:
    """The 32-bit kernel, the 64-bit kernel (made on first need) and the guard between
    them. Attributes not defined here (``source``, ``ptx``, ``attributes``, ``config`` ...)
    are the 32-bit kernel's: it is the one that almost every launch runs."""

    def __init__(self, narrow: Any, fits: Fits, make_wide: Callable[[], Any]) -> None:
        self.narrow = narrow
        self.fits = fits
        self._make_wide = make_wide
        self._wide: Any = None

    @property
    def wide(self) -> Any:
        """The 64-bit kernel (compiled on first use)."""
        if self._wide is None:
            self._wide = self._make_wide()
        return self._wide

    def launch(self, shape: tuple[int, ...], outs: Sequence[Any], captures: Sequence[Any]) -> None:
        """Run over ``shape`` with the kernel whose assumptions this launch meets."""
        if self.fits(shape, captures):
            self.narrow.launch(shape, outs, captures)
        else:
            self.wide.launch(shape, outs, captures)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("narrow", "_wide", "_make_wide", "fits"):
            raise AttributeError(name)
        return getattr(self.narrow, name)
