"""Element-wise producers fused into a collective's block tasks (folds, scans, segmented
folds and scans, stencils, filters; not permutes).

``fold_all(add, 0, zip_with(mul, x, y))`` over Dask arrays should read ``x`` and ``y``
once, as it does on one device, not write ``x * y`` to a Dask array and read that back.
Where a collective's source is an *element-wise* tree over arrays of one shape -- ``map``,
``zip_with``, tuples of arrays (``Zip``) and plain arrays, nothing that moves an index --
block ``k`` of the source is that tree over block ``k`` of each array. So the
collective's tasks take the arrays' blocks and each computes the collective of the tree
over them: the producer fuses into the collective's kernel, on the worker. (A
stencil's blocks get their halos from the arrays' neighbouring blocks, which for an
element-wise tree are the tree's halos; its boundary rule applies to the tree's values.)

The tree travels as a template: each array replaced by a ``Slot`` (its position among
the tree's distinct arrays, found in a fixed walk), rebuilt over a task's blocks. A tree
that moves indices (``backpermute``, ``slice``, a ``from_function`` that reads at
offsets), reads a Dask array from a function, or has no function at all keeps the
element path (its blocks computed, then the collective).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offload.acc.nodes import Leaf, Zip
from offload.dask.runtime import block_source, is_dask, stand_in_arrays
from offload.dask.sources import captured
from offload.delayed import Map, ZipWith
from offload.frontend.nodes import ArrayNode

_ELEMENTWISE = (Map, ZipWith, Leaf, Zip)
_COMPUTING = (Map, ZipWith)


@dataclass(frozen=True)
class Slot:
    """The place of the ``index``-th array of a producer's template."""

    index: int


@dataclass(frozen=True)
class Producer:
    """An element-wise tree with its arrays replaced by ``Slot``s (module docstring)."""

    template: Any

    def source(self, blocks: Sequence[Any]) -> Any:
        """The tree over one block of each array (in slot order)."""
        return _filled(self.template, blocks)

    def functions(self) -> tuple[object, ...]:
        """The user's functions of the tree (carried to the workers with their text)."""
        return tuple(_functions(self.template))

    def dtypes(self, arrays: Sequence[Any]) -> tuple[np.dtype[Any], ...]:
        """The tree's result dtypes over arrays of ``arrays``' dtypes and rank."""
        probe = stand_in_arrays(
            tuple(np.dtype(a.dtype) for a in arrays), (2,) * int(arrays[0].ndim)
        )
        return tuple(self.source(probe).dtypes)


def block_of(producer: Producer | None, blocks: Sequence[Any]) -> Any:
    """A collective's source over one block: the producer's tree over the blocks of its
    arrays, or (no producer) the blocks of the source's components."""
    return producer.source(blocks) if producer is not None else block_source(tuple(blocks))


def source_dtypes(comps: Sequence[Any], producer: Producer | None) -> tuple[np.dtype[Any], ...]:
    """The dtypes of a collective's source: the producer's results over arrays ``comps``,
    or (no producer) the components' own."""
    if producer is not None:
        return producer.dtypes(comps)
    return tuple(np.dtype(c.dtype) for c in comps)


def producer_functions(producer: Producer | None) -> tuple[object, ...]:
    return producer.functions() if producer is not None else ()


def elementwise(src: object) -> tuple[Producer, list[Any]] | None:
    """``src`` as a producer and its distinct arrays (module docstring), or ``None``."""
    if not isinstance(src, _COMPUTING):
        return None
    arrays: list[Any] = []
    slots: dict[int, int] = {}

    def walk(node: object) -> object | None:
        if not isinstance(node, ArrayNode):
            if not (hasattr(node, "shape") and hasattr(node, "dtype")):
                return None
            k = slots.setdefault(id(node), len(arrays))
            if k == len(arrays):
                arrays.append(node)
            return Slot(k)
        if not isinstance(node, _ELEMENTWISE):
            return None
        for nf in node.functions():
            if any(is_dask(v) for _, v in captured(nf.fn)):
                return None
        changed = {}
        for attr, sub in node.sources():
            new = walk(sub)
            if new is None:
                return None
            changed[attr] = new
        rebuilt: object = dataclasses.replace(node, **changed)  # type: ignore[type-var, arg-type]
        return rebuilt

    template = walk(src)
    if template is None or len({tuple(a.shape) for a in arrays}) != 1:
        return None
    return Producer(template), arrays


def _filled(node: object, blocks: Sequence[Any]) -> object:
    if isinstance(node, Slot):
        return blocks[node.index]
    assert isinstance(node, ArrayNode)
    changed = {attr: _filled(sub, blocks) for attr, sub in node.sources()}
    return dataclasses.replace(node, **changed)  # type: ignore[type-var]


def _functions(node: object) -> list[object]:
    if not isinstance(node, ArrayNode):
        return []
    out: list[object] = [nf.fn for nf in node.functions()]
    for _, sub in node.sources():
        out.extend(_functions(sub))
    return out
