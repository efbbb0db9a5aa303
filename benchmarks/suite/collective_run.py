"""Running an Accelerate-style collective node through a benchmark's ``compute``.

``compute(node)`` is how a collective is computed (``offload.compute_s/p/g(node)``, the
graph scheduler ``offload.acc.graph``). Under ``python_compute`` (CPython, the meaning of
``compute_*``) the node is evaluated by plain Python loops here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.suite.common import Compute, python_compute


def compute_node(compute: Compute, node: Any) -> Any:
    """``node`` computed by ``compute`` (``compute_*(node)``: the graph scheduler), or by
    plain Python loops under ``python_compute``."""
    if compute is python_compute:
        return python_node(node)
    return compute(node)  # type: ignore[call-arg]


def python_node(node: Any) -> Any:
    """A permute or an inclusive left scan (the two the suite uses) by Python loops."""
    from offload.acc.permute import IGNORE, Permute
    from offload.acc.scan import Scan

    if isinstance(node, Permute):
        out = np.array(node.defaults, copy=True)
        a = np.asarray(node.a)
        for i in np.ndindex(a.shape):
            d = node.ix(*i)
            d = d if isinstance(d, tuple) else (d,)
            if any(int(c) == IGNORE for c in d):
                continue
            d = tuple(int(c) for c in d)
            out[d] = out.dtype.type(node.f(a[i], out[d]))
        return out
    if isinstance(node, Scan) and node.z is None and node.seg is None and not node.right:
        a = np.asarray(node.a)
        out = np.empty_like(a)
        for row in np.ndindex(a.shape[:-1]):
            acc = None
            for j in range(a.shape[-1]):
                acc = a[(*row, j)] if acc is None else a.dtype.type(node.f(acc, a[(*row, j)]))
                out[(*row, j)] = acc
        return out
    raise NotImplementedError(f"no Python meaning written for {type(node).__name__}")
