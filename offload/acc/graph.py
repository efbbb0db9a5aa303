"""The graph scheduler: ``compute_*`` of a delayed-array tree that holds collectives.

1. Count the uses of each node object (a node reached twice is one node: sharing by
   identity).
2. Rewrite the tree bottom-up, each node once:

   * a ``Collective`` (a scan, a permute, ...): its sources are computed to arrays (each
     fused into one kernel, arrays kept as they are) and ``materialise`` runs the
     skeleton; the result replaces the node as an array leaf (a tuple result as a
     tuple-valued ``Zip`` of leaves);
   * a ``Scheduled`` node (a fold, a stencil): may be ``expand``-ed (a long fold into the
     stages of its reduction tree) and may have sources computed first
     (``materialised_sources``: a stencil's source that is not ``trivial``);
   * any element node used more than once that is not ``trivial`` is computed to an
     array once and read by its consumers (no work is duplicated: the rule of Accelerate's
     fusion, 2013 §4); a trivial one (an array, or an index remapping of trivial nodes:
     ``reverse``, ``transpose``, ``slice``, ``extend``, ``reshape``, ``Zip``) is fused
     into each consumer, as reading it costs what reading a materialised copy would.

3. The rewritten root is computed as one fused kernel by the driver (with the call's
   ``dtype=`` and ``out=``).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from offload.acc.base import Collective, Context, Scheduled
from offload.acc.nodes import Extend, Leaf, Reverse, Slice, Transpose, Zip, as_arrays_source
from offload.delayed import Delayed, Reshape
from offload.diagnostics import OffloadError
from offload.frontend.nodes import ArrayNode

TRIVIAL_NODES: tuple[type, ...] = (Leaf, Zip, Extend, Slice, Reverse, Transpose, Reshape)
"""Nodes whose element is one element of their sources at a remapped index."""

LEAF, ELEMENT, TRIVIAL, SCHEDULED, COLLECTIVE = range(5)
_KINDS: dict[type, int] = {}


def kind(x: object) -> int:
    """What ``x`` is to the scheduler (memoised by type: an ``isinstance`` test against
    the node ABCs costs a microsecond, and every call walks the tree a few times)."""
    t = type(x)
    k = _KINDS.get(t)
    if k is None:
        if not issubclass(t, ArrayNode):
            k = LEAF
        elif issubclass(t, Collective):
            k = COLLECTIVE
        elif issubclass(t, Scheduled):
            k = SCHEDULED
        elif issubclass(t, TRIVIAL_NODES):
            k = TRIVIAL
        else:
            k = ELEMENT
        _KINDS[t] = k
    return k


def needs_scheduler(root: object) -> bool:
    """Whether the tree ``root`` holds a collective, a scheduled node or a non-trivial
    node reached twice (else the driver computes it directly as one kernel)."""
    seen: set[int] = set()
    todo = [root]
    while todo:
        node = todo.pop()
        k = kind(node)
        if k == LEAF:
            continue
        if id(node) in seen:
            if not trivial(node):
                return True
            continue
        if k >= SCHEDULED:
            return True
        seen.add(id(node))
        todo.extend(src for _, src in node.sources())  # type: ignore[attr-defined]
    return False


def trivial(tree: object) -> bool:
    """An array, or an index remapping of trivial trees (cheap to read twice)."""
    k = kind(tree)
    if k == LEAF:
        return True
    return k == TRIVIAL and all(trivial(s) for _, s in tree.sources())  # type: ignore[attr-defined]


def count_uses(root: object) -> Counter[int]:
    """How many edges reach each node object (the root counts one)."""
    uses: Counter[int] = Counter()
    todo = [root]
    while todo:
        node = todo.pop()
        if kind(node) == LEAF:
            continue
        uses[id(node)] += 1
        if uses[id(node)] == 1:
            todo.extend(src for _, src in node.sources())  # type: ignore[attr-defined]
    return uses


class Scheduler:
    """One rewrite of a tree for one context (module docstring)."""

    def __init__(self, ctx: Context, root: object) -> None:
        self.ctx = ctx
        self.root = root
        self.inner = ctx if ctx.inner is None else dataclasses.replace(ctx, backend=ctx.inner)
        """Where a collective other than the root is computed: its result is an array
        only the call's own kernels read (``Context.inner``)."""
        self.uses = count_uses(root)
        self.done: dict[int, object] = {}
        self.keep: list[object] = []
        """The original nodes rewritten (held so that no id is reused meanwhile)."""

    def rewrite(self, node: object) -> object:
        """``node`` with every collective replaced by arrays (memoised by identity)."""
        k = kind(node)
        if k == LEAF:
            return node
        assert isinstance(node, ArrayNode)
        key = id(node)
        if key in self.done:
            return self.done[key]
        self.keep.append(node)
        srcs = {attr: self.rewrite(src) for attr, src in node.sources()}
        out: object
        if k == COLLECTIVE:
            assert isinstance(node, Collective)
            arrays = {attr: self.arrays(src, attr) for attr, src in srcs.items()}
            result = node.materialise(self._ctx_for(node), arrays)
            if self.ctx.trace is not None:
                self.ctx.trace.append((f"collective {type(node).__name__}", None))
            out = _collective_result(result)
        else:
            if k == SCHEDULED:
                assert isinstance(node, Scheduled)
                for attr in node.materialised_sources():
                    if not trivial(srcs[attr]):
                        srcs[attr] = self.materialise(
                            srcs[attr], f"source {attr} of {type(node).__name__}"
                        )
            out = rebuild(node, srcs)
            if kind(out) == SCHEDULED:
                assert isinstance(out, Scheduled)
                expanded = out.expand(self._ctx_for(node))
                if expanded is not None:
                    out = as_arrays_source(expanded)
            if self.uses[key] > 1 and not trivial(out):
                out = self.materialise(out, f"shared {type(node).__name__}")
        self.done[key] = out
        return out

    def _ctx_for(self, node: object) -> Context:
        """The context a node's skeletons run in: the call's for the root (its result is
        the call's), else ``inner``."""
        return self.ctx if node is self.root else self.inner

    def materialise(self, tree: object, what: str) -> object:
        """``tree`` computed to an array leaf (a ``Zip`` of leaves for a tuple)."""
        if not isinstance(tree, Delayed):
            return tree
        return as_arrays_source(self.ctx.compute(tree, what))

    def arrays(self, tree: object, attr: str) -> Any:
        """A rewritten source as a collective takes it: an array or a tuple of arrays."""
        if isinstance(tree, _Parts):
            return tuple(tree)
        if isinstance(tree, Zip) and trivial(tree) and _zip_of_arrays(tree):
            return _unzip(tree)
        if isinstance(tree, Leaf) and not isinstance(tree.x, ArrayNode):
            return tree.x
        if type(tree) is tuple:  # (a tuple source as given: each component computed)
            return tuple(self.arrays(c, attr) for c in tree)
        if not isinstance(tree, Delayed):
            return tree
        return self.ctx.compute(tree, f"source {attr}")


def _zip_of_arrays(z: Zip) -> bool:
    return not any(isinstance(h, ArrayNode) for h in z.heads())


def _unzip(z: Zip) -> tuple[Any, ...]:
    return z.heads()


class _Parts(tuple):  # type: ignore[type-arg]
    """A collective's tuple result whose arrays differ in shape (``scanl_total``'s scan
    and total): no array source, only the ``Part`` collectives that pick from it read it."""


def _collective_result(result: Any) -> object:
    """A materialised result as a source: arrays as leaves (a tuple of one shape as a
    ``Zip``); a tuple of differently shaped arrays, or of tuples (``scanl_total`` of a
    tuple array: a pair of tuples of arrays), kept as it is (``_Parts``)."""
    if isinstance(result, tuple) and (
        any(isinstance(r, tuple) for r in result)
        or len({tuple(getattr(r, "shape", ())) for r in result}) > 1
    ):
        return _Parts(result)
    return as_arrays_source(result)


def rebuild(node: ArrayNode, srcs: dict[str, object]) -> ArrayNode:
    """``node`` with its sources replaced (the same object where none changed). A node
    that holds extents of its sources (a fold's, a stencil's, a slice's fixed indices)
    takes them anew (``refit``): a filter's result is shorter than the upper bound its
    consumers were built with."""
    changed = {a: s for a, s in srcs.items() if s is not getattr(node, a)}
    if not changed:
        return node
    if not dataclasses.is_dataclass(node):
        raise OffloadError(
            f"internal: {type(node).__name__} is not a dataclass: its sources cannot be "
            "replaced by the collectives' results"
        )
    new: ArrayNode = dataclasses.replace(node, **changed)  # type: ignore[type-var]
    refit = getattr(new, "refit", None)
    return new if refit is None else refit()  # type: ignore[no-any-return]


def schedule(ctx: Context, root: object) -> object:
    """The tree ``root`` rewritten for ``ctx`` (every collective computed)."""
    return Scheduler(ctx, root).rewrite(root)


def compute(
    ctx: Context,
    root: Delayed,
    dtype: Any,
    out: Any,
) -> Any:
    """``compute_*(root, dtype=, out=)`` of a tree that holds collectives, on ``ctx``'s
    target (``ctx.run`` is the driver's ``run``)."""
    tree = schedule(ctx, root)
    if dtype is None and out is None and isinstance(tree, Zip) and _zip_of_arrays(tree):
        return _unzip(tree)  # the root was a collective of a tuple result: its arrays
    if not isinstance(tree, Delayed):  # the root was a collective: its array
        if dtype is None and out is None:
            return tree
        tree = Leaf(tree)
    return ctx.run_tree(tree, tuple(tree.shape), dtype, out)
