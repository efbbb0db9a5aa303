"""``offload.dask.compute(node)`` of a delayed tree holding collectives over Dask arrays.

As ``offload.acc.graph`` does for NumPy arrays, the tree is rewritten bottom-up, each
node object once (sharing by identity):

* a collective (``fold``, ``fold1``, ``fold_all``, ``fold_seg``, the scans and their
  segmented and ``_total`` forms, ``stencil``, ``permute``, ``scatter``, ``filter``)
  becomes the Dask arrays of its result, computed block by block (``folds``, ``scans``,
  ``segments``, ``stencils``, ``permutes``, ``filters``); its source, if it is an element
  tree (``map``, ``zip_with``, ...), is first computed as one Dask array by the element
  path (one fused kernel per block);
* an element node is kept, over its rewritten sources, to be fused with its consumers;
  one used more than once that is not trivial is computed once as a Dask array;
* what is left (an element tree over Dask arrays) is computed by the element path.

A filter's result has chunks of unknown size (``nan``): only another filter, or the
root, may take it. Anything else reading such an array, and any other collective, is a
``DaskUnsupported`` error naming it, raised while the graph is built, never from inside
Dask.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from offload.acc.filter import Filter
from offload.acc.fold import Fold, FoldSeg
from offload.acc.graph import COLLECTIVE, LEAF, SCHEDULED, count_uses, kind, trivial
from offload.acc.nodes import Leaf, Zip, as_source
from offload.acc.permute import Permute, Scatter
from offload.acc.scan import Part, Scan
from offload.acc.stencil import Stencil
from offload.dask.errors import DaskUnsupported
from offload.dask.filters import cast_tree, filter_tree, unknown_sizes
from offload.dask.folds import fold_all_tree, fold_tree
from offload.dask.permutes import permute_tree
from offload.dask.producers import Producer, elementwise
from offload.dask.runtime import Runner, is_dask
from offload.dask.scans import scan_tree
from offload.dask.segments import check_lengths, seg_tree
from offload.dask.sources import captured
from offload.dask.stencils import stencil_tree
from offload.delayed import Delayed, Reshape
from offload.frontend.nodes import ArrayNode
from offload.stream.fold import SPLIT_EVERY

ElementCompute = Callable[..., Any]
"""The element path: ``compute(tree, target=, chunks=, dtype=)`` of a tree holding no
collective, as a Dask array (a tuple of them for a tuple-valued tree)."""


class Whole(list[Any]):
    """A ``scanl_total``/``scanr_total``'s scan with ``z`` included (its components): the
    ``Part`` nodes slice the exclusive scan and the total from it."""


class DaskScheduler:
    """One rewrite of a tree (module docstring)."""

    def __init__(
        self, root: object, target: str, elements: ElementCompute, split_every: int = SPLIT_EVERY
    ) -> None:
        self.target = target
        self.runner = Runner.for_target(target)
        self.elements = elements
        self.split_every = split_every
        self.uses = count_uses(root)
        self.done: dict[int, object] = {}
        self.keep: list[object] = []
        """The nodes rewritten (held so that no id is reused meanwhile)."""

    def rewrite(self, node: object) -> object:
        """``node`` with every collective replaced by Dask arrays (memoised by identity)."""
        k = kind(node)
        if k == LEAF:
            return node
        assert isinstance(node, ArrayNode)
        key = id(node)
        if key in self.done:
            return self.done[key]
        self.keep.append(node)
        srcs = {attr: self.rewrite(src) for attr, src in node.sources()}
        if not isinstance(node, Filter):
            _known_sizes(node, srcs)
        out: object
        if k in (COLLECTIVE, SCHEDULED):
            result = self.collective(node, srcs)
            out = result if isinstance(result, Whole) else _as_node_source(result)
        else:
            out = _rebuild(node, srcs)
            if self.uses[key] > 1 and not trivial(out):
                out = _as_node_source(self.components(out))
        self.done[key] = out
        return out

    def collective(self, node: ArrayNode, srcs: dict[str, object]) -> list[Any]:
        """The Dask arrays of a collective's result (``srcs``: its rewritten sources)."""
        for nf in node.functions():
            if isinstance(node, Scatter) and nf.attr == "ix":
                continue  # (it reads 'to', a source of the scatter)
            for name, value in captured(nf.fn):
                if is_dask(value):
                    raise DaskUnsupported(
                        f"offload.dask: the function of {_what(node)} "
                        f"('{getattr(nf.fn, '__qualname__', nf.fn)}') reads the Dask array "
                        f"'{name}': a collective's function may capture NumPy arrays and "
                        "scalars, not Dask arrays (make it a source of the collective, or "
                        "compute it first)"
                    )
        if isinstance(node, Fold):
            return self.fold(node, srcs["a"])
        if isinstance(node, FoldSeg):
            lengths = np.diff(np.asarray(srcs["offsets"]))
            comps, producer = self.sourced(srcs["a"])
            return seg_tree(comps, lengths, node, self.runner, producer)
        if isinstance(node, Stencil):
            comps, producer = self.sourced(srcs["a"])
            return stencil_tree(comps, node, self.runner, producer)
        if isinstance(node, Scan):
            return self.scan(node, srcs)
        if isinstance(node, Part):
            return _part(node, srcs["whole"])
        if isinstance(node, Permute):
            a, defaults = self.components(srcs["a"]), self.components(srcs["defaults"])
            to = self.components(srcs["to"])[0] if isinstance(node, Scatter) else None
            return permute_tree(a, defaults, node, self.runner, split_every=self.split_every, to=to)
        if isinstance(node, Filter):
            comps, producer = self.sourced(srcs["a"])
            return filter_tree(comps, node, self.runner, producer)
        raise DaskUnsupported(
            f"offload.dask: {_what(node)} is not supported on Dask arrays yet (supported: "
            "fold, fold1, fold_all, fold_seg, the scans, stencil, permute, scatter, filter "
            "and element nodes); compute it with compute_s/compute_p/compute_g on NumPy "
            "arrays, or compute its source with offload.dask and finish with NumPy"
        )

    def fold(self, node: Fold, a: object) -> list[Any]:
        """A fold's tree; an element-wise source is fused into its tasks (``producers``)."""
        every = self.split_every
        if isinstance(a, Reshape) and len(a.shape) == 1:  # fold_all (a row-major flatten)
            comps, producer = self.sourced(a.x)
            if comps[0].ndim >= 1:
                return fold_all_tree(comps, node.f, node.z, self.runner, every, producer=producer)
        comps, producer = self.sourced(a)
        return fold_tree(comps, node.f, node.z, self.runner, every, producer=producer)

    def sourced(self, src: object) -> tuple[list[Any], Producer | None]:
        """A collective's source as Dask arrays: an element-wise tree's arrays with the
        tree as their producer (fused into the collective's tasks), else ``components``."""
        fused = elementwise(src)
        if fused is None:
            return self.components(src), None
        producer, arrays = fused
        # Chunked as the first Dask array among them: a NumPy array is cut to match (not
        # the user's Dask array rechunked to NumPy's automatic chunks).
        ref = next((x for x in arrays if is_dask(x)), None)
        if ref is None:
            return self.aligned([self.components(x)[0] for x in arrays]), producer
        import dask.array as da

        comps = [x if is_dask(x) else da.from_array(x, chunks=ref.chunks) for x in arrays]
        return self.aligned([ref, *comps])[1:], producer

    def scan(self, node: Scan, srcs: dict[str, object]) -> list[Any]:
        comps, producer = self.sourced(srcs["a"])
        if node.seg is not None:
            seg = srcs["seg"]
            if isinstance(seg, ArrayNode):
                raise DaskUnsupported(
                    f"offload.dask: {node.name}'s segment lengths are a delayed array; "
                    "compute them to a NumPy (or Dask) array first"
                )
            host = seg.compute() if is_dask(seg) else seg  # type: ignore[attr-defined]
            lengths = check_lengths(host, int(comps[0].shape[-1]), node.name)
            return seg_tree(comps, lengths, node, self.runner, producer)
        out = scan_tree(comps, node, self.runner, producer)
        return Whole(out) if node.total else out

    def components(self, src: object) -> list[Any]:
        """A rewritten source as Dask arrays, one per component, chunked alike: element
        trees computed by the element path, NumPy arrays wrapped."""
        import dask.array as da_module

        da: Any = da_module
        if isinstance(src, Leaf) and not isinstance(src.x, ArrayNode):
            return self.components(src.x)
        if isinstance(src, tuple | list):  # a tuple source (struct of arrays)
            comps = [c for item in src for c in self.components(item)]
        elif isinstance(src, Zip) and trivial(src) and _heads_are_arrays(src):
            comps = [c for head in _heads(src) for c in self.components(head)]
        elif isinstance(src, Delayed):
            out = self.elements(src, target=self.target, chunks=None, dtype=None)
            comps = list(out) if isinstance(out, tuple) else [out]
        elif is_dask(src):
            comps = [src]
        elif hasattr(src, "shape") and hasattr(src, "dtype"):
            comps = [da.from_array(src)]
        else:
            raise DaskUnsupported(
                f"offload.dask: a collective's source is a {type(src).__name__}, not an array"
            )
        return self.aligned(comps)

    @staticmethod
    def aligned(comps: list[Any]) -> list[Any]:
        """Dask arrays of one shape chunked as the first."""
        first = comps[0].chunks
        return [c if c.chunks == first else c.rechunk(first) for c in comps]


def _heads(z: Zip) -> list[Any]:
    out: list[Any] = []
    cur: Zip | None = z
    while cur is not None:
        out.append(cur.head)
        cur = cur.tail
    return out


def _heads_are_arrays(z: Zip) -> bool:
    return not any(isinstance(h, ArrayNode) for h in _heads(z))


def _as_node_source(comps: list[Any]) -> object:
    """A result's Dask arrays as a source of the rest of the tree (a tuple result of
    unknown chunk sizes as a plain tuple: a ``Zip`` needs known shapes)."""
    if len(comps) == 1:
        return comps[0]
    if any(unknown_sizes(c) for c in comps):
        return tuple(comps)
    return as_source(tuple(comps))


def _part(node: Part, whole: object) -> list[Any]:
    assert isinstance(whole, Whole)
    scan = node.whole
    n = int(whole[0].shape[-1]) - 1
    cut: tuple[Any, ...]
    if node.index == 0:
        cut = np.s_[..., 1:] if scan.right else np.s_[..., :n]
    else:
        cut = np.s_[..., 0] if scan.right else np.s_[..., n]
    return [c[cut] for c in whole]


def _unknown(src: object) -> bool:
    """Whether a rewritten source holds a Dask array of unknown chunk sizes."""
    if is_dask(src):
        return unknown_sizes(src)
    if isinstance(src, Leaf):
        return _unknown(src.x)
    if isinstance(src, Zip):
        return any(_unknown(h) for h in _heads(src))
    if isinstance(src, tuple | list):
        return any(_unknown(s) for s in src)
    return False


def _known_sizes(node: ArrayNode, srcs: dict[str, object]) -> None:
    for attr, src in srcs.items():
        if _unknown(src):
            raise DaskUnsupported(
                f"offload.dask: source '{attr}' of {_what(node)} has chunks of unknown size "
                "(a filter's result, or Dask's boolean indexing): its length is known only "
                "once it is computed, and only another filter can take it as it is; compute "
                "it first (offload.dask.compute(...).persist().compute_chunk_sizes()) and "
                "use that Dask array as the source"
            )


def _what(node: object) -> str:
    kind = type(node).__name__
    name = getattr(node, "name", None)
    return f"'{name if isinstance(name, str) else kind.lower()}' ({kind} node)"


def _rebuild(node: ArrayNode, srcs: dict[str, object]) -> object:
    """``node`` with its sources replaced (the same object where none changed)."""
    import dataclasses

    changed = {a: s for a, s in srcs.items() if s is not getattr(node, a)}
    if not changed:
        return node
    if not dataclasses.is_dataclass(node):
        raise DaskUnsupported(
            f"offload.dask: {type(node).__name__} is not a dataclass node: its sources "
            "cannot be replaced by Dask arrays"
        )
    return dataclasses.replace(node, **changed)  # type: ignore[type-var]


def compute_tree(
    root: ArrayNode,
    target: str,
    elements: ElementCompute,
    *,
    chunks: Any = None,
    dtype: Any = None,
    split_every: int = SPLIT_EVERY,
) -> Any:
    """``offload.dask.compute(root, ...)`` of a tree that holds collectives."""
    scheduler = DaskScheduler(root, target, elements, split_every)
    tree = scheduler.rewrite(root)
    if isinstance(tree, Delayed) and not (isinstance(tree, Zip) and _arrays_zip(tree)):
        return elements(tree, target=target, chunks=chunks, dtype=dtype)
    comps: list[Any] = (
        _heads(tree) if isinstance(tree, Zip) else list(tree) if type(tree) is tuple else [tree]
    )
    if any(unknown_sizes(c) for c in comps):  # a filter's result
        if chunks is not None:
            raise DaskUnsupported(
                "offload.dask: chunks= cannot rechunk a filter's result, whose chunk sizes "
                "are known only once it is computed; call .compute_chunk_sizes() on it, "
                "then .rechunk()"
            )
        if dtype is not None:
            comps = cast_tree(comps, dtype, scheduler.runner)
        return comps[0] if len(comps) == 1 else tuple(comps)
    if dtype is not None:
        return elements(
            Leaf(tree) if len(comps) == 1 else tree, target=target, chunks=chunks, dtype=dtype
        )
    if chunks is not None:
        comps = [c.rechunk(chunks) for c in comps]
    return comps[0] if len(comps) == 1 else tuple(comps)


def _arrays_zip(z: Zip) -> bool:
    return trivial(z) and _heads_are_arrays(z)
