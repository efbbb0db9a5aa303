"""The integer interval domain shared by the range analysis (ranges.py) and its transfer
functions (range_transfer.py): ``Range``, the range of a type, the assumed index limit."""

from __future__ import annotations

from dataclasses import dataclass

from offload.ir.types import ScalarType

INDEX_LIMIT = 2**62
"""Exclusive upper bound assumed for index parameters and array extents."""


@dataclass(frozen=True)
class Range:
    """The closed interval ``[lo, hi]`` of mathematical integers."""

    lo: int
    hi: int

    def union(self, other: Range) -> Range:
        return Range(min(self.lo, other.lo), max(self.hi, other.hi))

    def intersect(self, other: Range) -> Range | None:
        lo, hi = max(self.lo, other.lo), min(self.hi, other.hi)
        return Range(lo, hi) if lo <= hi else None

    @property
    def const(self) -> int | None:
        return self.lo if self.lo == self.hi else None

    def __str__(self) -> str:
        return f"[{self.lo}, {self.hi}]"


def type_range(t: ScalarType) -> Range:
    """Every value of the integer (or bool) type ``t``."""
    if t.is_bool:
        return Range(0, 1)
    if t.is_signed:
        return Range(-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1)
    return Range(0, (1 << t.bits) - 1)
