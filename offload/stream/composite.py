"""Trees made of several streamed parts: work after a collective (``map(g, fold(...))``),
a collective over another (a fold of a scan, a stencil of a stencil), shared work.

The tree is rewritten bottom-up as the graph scheduler (``offload.acc.graph``) rewrites it,
each node once (sharing by identity), but every part is computed into host arrays, so no
part needs more device memory than the budget:

* a collective or stencil whose sources are now element trees over host arrays is one
  that streaming covers (``offload.stream.trees``): it is computed streamed where its
  inputs and result exceed the budget, else unstreamed on the device, and its result
  comes back to the host as the array its consumers read (a ``_total`` scan runs once,
  its pair kept for each item the tree reads);
* an element node used twice that is not ``trivial`` is computed once into host arrays
  (streamed where it exceeds the budget), as the scheduler materialises it on the device;
* what is left of the root -- an element tree over host arrays -- is computed streamed or
  unstreamed the same way, with the call's ``dtype``.

Every part reads the values the unstreamed call's part reads and each computes them with
its unstreamed bits (the streamed collectives keep their trees), so the result is the
unstreamed call's, bit for bit. The cost is a round trip through host memory for each
intermediate result (the unstreamed call keeps them on the device). A part streaming
does not cover and that exceeds the budget (a permute of a source of rank 4) raises
``StreamUnsupported`` naming it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from offload.acc.graph import COLLECTIVE, LEAF, SCHEDULED, count_uses, kind, rebuild, trivial
from offload.acc.graph import compute as compute_graph
from offload.acc.nodes import Leaf, Zip, as_arrays_source
from offload.acc.scan import Part
from offload.acc.skeletons.operands import source_dtypes
from offload.acc.values import shape_of
from offload.delayed import Delayed
from offload.diagnostics import OffloadError
from offload.frontend.nodes import ArrayNode
from offload.stream import calls, trees
from offload.stream.collectives import (
    StreamUnsupported,
    cast,
    device_context,
    host_bytes,
    to_host,
)


class _Streamer:
    """One bottom-up rewrite of a tree into host arrays (module docstring)."""

    def __init__(self, root: object, limit: int | None, rows: int | None) -> None:
        self.limit = limit
        """The device memory budget; ``None``: stream every part streaming covers."""
        self.rows = rows
        self.uses = count_uses(root)
        self.done: dict[int, object] = {}
        self.pairs: dict[int, Any] = {}
        """A ``_total`` scan's host results (the pair), by the id of the scan."""
        self.keep: list[object] = []  # (the rewritten nodes, so that no id is reused)

    def rewrite(self, node: object) -> object:
        """``node`` with every collective, stencil and shared element node computed to
        host arrays (memoised by identity)."""
        k = kind(node)
        if k == LEAF:
            return node
        assert isinstance(node, ArrayNode)
        key = id(node)
        if key in self.done:
            return self.done[key]
        self.keep.append(node)
        out: object
        if isinstance(node, Part):  # (both items of a ``_total`` scan: one streamed run)
            pair = self.pairs.get(id(node.whole))
            if pair is None:
                pair = self.pairs[id(node.whole)] = self._computed(self._rebuilt(node.whole))
            out = as_arrays_source(pair[node.index])
        elif k in (SCHEDULED, COLLECTIVE):
            out = as_arrays_source(self._computed(self._rebuilt(node)))
        else:
            out = self._rebuilt(node)
            if self.uses[key] > 1 and not trivial(out):
                out = as_arrays_source(self.element(out, None))
        self.done[key] = out
        return out

    def _rebuilt(self, node: ArrayNode) -> ArrayNode:
        return rebuild(node, {attr: self.rewrite(src) for attr, src in node.sources()})

    def _computed(self, node: ArrayNode) -> Any:
        """A collective over element trees computed into host arrays (a tuple for a
        tuple result, the pair of a ``_total`` scan)."""
        try:
            st = trees.recognise(node)
        except StreamUnsupported as err:
            if self.limit is None:
                raise
            need = _need(node)
            if need <= self.limit:
                return _unstreamed(node)
            raise StreamUnsupported.at(
                f"{err.diagnostics[0].message}, and its inputs and result ({need} bytes) "
                f"exceed ol.config.device_memory_limit ({self.limit} bytes)",
                None,
                hint=err.diagnostics[0].hint,
            ) from None
        if self.limit is not None and trees.need(st) <= self.limit:
            return _unstreamed(node)
        return trees.run(st, None, self.rows)

    def element(self, tree: object, dtype: Any) -> Any:
        """An element tree over host arrays computed into host arrays (streamed where it
        exceeds the budget)."""
        if isinstance(tree, Leaf):
            tree = tree.x
        if type(tree) is np.ndarray or (isinstance(tree, Zip) and _host_zip(tree)):
            out = _unzip(tree) if isinstance(tree, Zip) else tree
            return out if dtype is None else cast(out, dtype)
        if not isinstance(tree, Delayed):
            raise OffloadError(f"internal: a streamed tree's part is {type(tree).__name__}")
        shape = tuple(shape_of(tree))
        if shape and 0 not in shape and (self.limit is None or _need(tree) > self.limit):
            return calls.run(tree, shape, dtype, rows=self.rows)
        return to_host(device_context().run_tree(tree, shape, dtype, None))


def _need(tree: object) -> int:
    """Device bytes an unstreamed ``tree`` takes at most: the host arrays it reads and
    its result."""
    item = sum(dt.itemsize for dt in source_dtypes(tree))
    return host_bytes(tree) + item * math.prod(shape_of(tree))


def _unstreamed(node: ArrayNode) -> Any:
    """``node`` computed on the device unstreamed, its result brought to the host."""
    return to_host(compute_graph(device_context(), node, None, None))  # type: ignore[arg-type]


def _host_zip(z: Zip) -> bool:
    """Whether ``z`` is a tuple of host arrays (a materialised tuple result)."""
    return all(type(h) is np.ndarray for h in _unzip(z))


def _unzip(z: Zip) -> tuple[Any, ...]:
    return tuple(h.x if isinstance(h, Leaf) else h for h in z.heads())


def run(root: object, dtype: Any = None, *, limit: int | None, rows: int | None = None) -> Any:
    """``compute_g(root, dtype=dtype)`` with every part within ``limit`` device bytes
    (``None``: every part streaming covers streamed, ``rows`` rows a chunk): host NumPy
    arrays, the unstreamed call's bits (module docstring)."""
    s = _Streamer(root, limit, rows)
    return s.element(s.rewrite(root), dtype)
