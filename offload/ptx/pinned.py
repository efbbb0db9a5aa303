"""Which captured arrays a GPU kernel is specialised on (the GPU and simulator targets').

Host arrays frozen with ``offload.use``, of at most ``PINNED_BYTES``: their contents become
constants in the kernel (constant-index reads fold, others read the constant bank). A later
call must pass the same array with the same contents: they are compared on every call (a
kilobyte at most), since a frozen view's base, or an array thawed and frozen by hand, can
change under its freeze record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from offload.backend import Pinned
from offload.ir.core import ConstArray
from offload.runtime.memory import FrozenTable

PINNED_BYTES = 1024
"""The largest frozen array a kernel is specialised on: a stencil's or filter's weights,
small enough to stay in the constant cache and to keep the kernel's text small."""


def frozen_pinned(values: Sequence[Any], table: FrozenTable) -> dict[int, Pinned]:
    """Capture position -> ``Pinned`` for every small frozen host array of ``values``."""
    pinned: dict[int, Pinned] = {}
    for k, v in enumerate(values):
        if type(v) is not np.ndarray or not 0 < v.nbytes <= PINNED_BYTES or v.ndim == 0:
            continue
        if table.record(v) is None or v.dtype.kind not in "biuf":
            continue
        value = ConstArray.of(v)

        def same(x: Any, v: Any = v, data: bytes = value.data) -> bool:
            return x is v and x.tobytes() == data

        pinned[k] = Pinned(value, same)
    return pinned
