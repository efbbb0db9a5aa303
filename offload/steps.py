"""The replay lane's element-kernel step (``offload.replay``): what ``driver.run`` records
for one kernel launch of a scheduled tree, and runs again on a warm call."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from offload.backend import Backend, Kernel


@dataclass(frozen=True)
class Launch:
    """One specialisation's ``kernel`` run over ``shape`` for captured values of the
    types it was compiled for, into fresh results of ``dtypes``."""

    backend: Backend
    kernel: Kernel
    dtypes: Sequence[np.dtype[Any]]
    shape: tuple[int, ...]
    _fast: list[Any] = field(default_factory=list, compare=False)
    """``[run]``: the backend's ``replay_launch`` for this step (made by its first
    replay), or ``[None]``: the general launch."""

    def __call__(self, *values: Any) -> Any:
        fast = self._fast
        if not fast:
            fast.append(self.backend.replay_launch(self.kernel, self.shape, self.dtypes, values))
        run = fast[0]
        outs = None if run is None else run(*values)
        if outs is None:
            outs = self.backend.allocate(self.shape, self.dtypes)
            if 0 not in self.shape:
                captures = self.backend.prepare_captures(values)
                self.kernel.launch(self.shape, outs, captures)
        return outs[0] if len(outs) == 1 else tuple(outs)
