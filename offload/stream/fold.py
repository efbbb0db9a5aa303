"""The extension point for folds over blocks (streamed chunks, Dask blocks).

A ``BlockFold`` is a fold with an associative ``combine`` and its ``neutral`` element,
plus the ``partial`` of one block, which offload computes where the block is (the
collectives' compiled ``fold_all`` over a device chunk; ``SequentialFold`` is the
reference: a left fold in Python). Partials are combined by ``combine_tree``: groups of
``split_every`` consecutive partials, each folded left to right, level after level — the
same fixed tree as ``dask.array.reduction`` with that ``split_every`` over one axis of
blocks, so for one chunking the result is the same on every run, scheduler and machine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

SPLIT_EVERY = 8
"""Partials combined per node of the combine tree."""


class BlockFold(Protocol):
    """A fold whose per-block partials offload computes (see the module docstring)."""

    neutral: Any

    def partial(self, block: Any) -> Any:
        """The fold of one block (a NumPy or CuPy array) as a scalar."""
        ...

    def combine(self, a: Any, b: Any) -> Any:
        """``a`` then ``b`` combined (associative; ``neutral`` is its identity)."""
        ...


@dataclass(frozen=True)
class SequentialFold:
    """A ``BlockFold`` whose partial folds a block left to right in row-major order with
    ``combine`` in Python: the reference the collectives' compiled fold replaces."""

    combine: Callable[[Any, Any], Any]
    neutral: Any

    def partial(self, block: Any) -> Any:
        host = block if isinstance(block, np.ndarray) else getattr(block, "get", lambda: block)()
        acc = self.neutral
        for v in np.asarray(host).reshape(-1).tolist():
            acc = self.combine(acc, v)
        return acc


def fold_left(fold: BlockFold, values: Sequence[Any]) -> Any:
    """``values`` combined left to right, from ``fold.neutral``."""
    acc = fold.neutral
    for v in values:
        acc = fold.combine(acc, v)
    return acc


def combine_tree(fold: BlockFold, partials: Sequence[Any], split_every: int = SPLIT_EVERY) -> Any:
    """The partials (in block order) combined in the fixed tree of the module docstring."""
    if split_every < 2:
        raise ValueError(f"split_every must be >= 2, got {split_every}")
    level = list(partials)
    while len(level) > 1:
        level = [
            fold_left(fold, level[k : k + split_every]) for k in range(0, len(level), split_every)
        ]
    return level[0] if level else fold.neutral
