"""Accelerate-style collectives on the delayed-array graph (DESIGN.md §1): folds, scans,
segmented operations, permute/scatter, stencil, filter and the structural nodes.

``base.Collective`` is the contract between a node computed by a skeleton (not per
element) and the graph scheduler that materialises it before the rest of the tree is
fused into one kernel.
"""

from offload.acc.fold import fold, fold1, fold_all, fold_seg
from offload.acc.nodes import ALL, extend, generate, replicate, reverse, slice, transpose
from offload.acc.stencil import constant, stencil

__all__ = [
    "ALL",
    "constant",
    "extend",
    "fold",
    "fold1",
    "fold_all",
    "fold_seg",
    "generate",
    "replicate",
    "reverse",
    "slice",
    "stencil",
    "transpose",
]
