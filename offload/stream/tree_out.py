"""``out=`` for a streamed tree holding collectives (a fold, scan, permute, filter or
stencil, alone or inside other work): the tree streams into fresh host arrays as it does
without ``out=``, and the result is copied into the caller's host NumPy arrays.

``out=`` is checked as the unstreamed call checks it (``offload.out_rules.wanted_dtypes``:
one array per result, writeable, the result's dtype -- ``dtype=``'s where given -- cast
to the array's under NumPy's ``same_kind`` rule) before any chunk runs, and so is its shape
where the tree's shape does not depend on the data (a tree holding a ``filter`` has the
length the filter finds: its shape is checked once that is known). Computing fresh and
copying also keeps NumPy's meaning where ``out=`` shares memory with an input: the result
of the inputs as they were.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from offload.acc.filter import Filter
from offload.frontend.nodes import ArrayNode
from offload.out_rules import wanted_dtypes


def check(root: Any, dtype: Any, out: Any) -> None:
    """Raise ``TypeError``/``ValueError`` where ``out`` cannot take ``root``'s result."""
    outs = out if type(out) is tuple else (out,)
    wanted_dtypes(dtype, out, root.dtypes)
    if not _holds_filter(root):
        shape = tuple(root.shape)
        for k, o in enumerate(outs):
            _same_shape(o, shape, k, len(outs))


def write(out: Any, made: Any) -> Any:
    """Copy the streamed result ``made`` (an array or a tuple of arrays) into ``out``."""
    outs = out if type(out) is tuple else (out,)
    results = made if type(made) is tuple else (made,)
    for k, (o, m) in enumerate(zip(outs, results, strict=True)):
        _same_shape(o, tuple(np.shape(m)), k, len(outs))
        np.copyto(o, m, casting="same_kind")
    return out


def _same_shape(o: np.ndarray[Any, Any], shape: tuple[int, ...], k: int, n: int) -> None:
    if tuple(o.shape) != shape:
        which = "out=" if n == 1 else f"out=[{k}]"
        raise ValueError(f"{which} has shape {tuple(o.shape)}, the result {shape}")


def _holds_filter(node: object) -> bool:
    """Whether the tree ``node`` holds a ``filter`` (whose length the data decides)."""
    if isinstance(node, Filter):
        return True
    if not isinstance(node, ArrayNode):
        return False
    return any(_holds_filter(source) for _, source in node.sources())
