"""A collective's Dask graph, written task by task.

Each collective builds a dict of tasks (Dask's graph specification: ``(function, *args)``
with keys for the blocks it reads, a list of keys for several) whose keys start with its
own unique name, and turns the tasks that give the result's blocks into Dask arrays: one
per component of the result (a task may return a tuple of arrays: struct of arrays).
Every array is given its ``meta``.
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Key = tuple[Any, ...]
"""A task's key: ``(name, *block_index)``."""


@dataclass(frozen=True)
class Static:
    """A task argument Dask must pass as it is (a tuple of ints could be read as a key)."""

    value: Any


def block_key(x: Any, index: Sequence[int]) -> Key:
    """The key of block ``index`` of the Dask array ``x``."""
    return (x.name, *index)


class Tasks:
    """The tasks of one collective over the Dask arrays ``inputs`` (module docstring)."""

    def __init__(self, what: str, inputs: Sequence[Any]) -> None:
        self.name = f"offload-{what}-{uuid.uuid4().hex}"
        self.inputs = list(inputs)
        self.dsk: dict[Key, Any] = {}

    def add(self, stage: str, index: Sequence[int], fn: Callable[..., Any], *args: Any) -> Key:
        """A task ``fn(*args)`` (keys in ``args`` are replaced by their blocks)."""
        key: Key = (f"{self.name}-{stage}", *index)
        self.dsk[key] = (fn, *args)
        return key

    def arrays(
        self,
        blocks: Mapping[tuple[int, ...], Key],
        chunks: tuple[tuple[int, ...], ...],
        metas: Sequence[Any],
    ) -> list[Any]:
        """The result as Dask arrays, one per component (``metas[c]`` its meta): block
        ``index`` of component ``c`` is item ``c`` of the tuple that task
        ``blocks[index]`` returns."""
        import dask.array as da_module
        from dask.highlevelgraph import HighLevelGraph

        da: Any = da_module
        out: list[Any] = []
        for c in range(len(metas)):
            name = f"{self.name}-out{c}"
            for index, key in blocks.items():
                self.dsk[(name, *index)] = (operator.getitem, key, c)
        for c, m in enumerate(metas):
            name = f"{self.name}-out{c}"
            graph = HighLevelGraph.from_collections(name, dict(self.dsk), dependencies=self.inputs)
            out.append(da.Array(graph, name, chunks, meta=m))
        return out


def grid(numblocks: Sequence[int]) -> list[tuple[int, ...]]:
    """Every block index of a grid of ``numblocks``, in row-major order."""
    return [tuple(int(i) for i in ix) for ix in np.ndindex(*numblocks)]


def window_arg(tasks: Tasks, x: Any, window: Sequence[tuple[int, int]], stage: str, at: Key) -> Any:
    """The part ``window`` (per axis ``(start, stop)``) of the Dask array ``x`` as an
    argument of a task of ``tasks`` at index ``at``: the key of a block of ``x`` where the
    window is that block (no task), a task slicing the one block holding it, else a task
    joining the blocks of ``x[window]`` (which becomes an input of ``tasks``)."""
    index: list[int] = []
    local: list[slice] = []
    for (start, stop), chunks in zip(window, x.chunks, strict=True):
        lo = 0
        for b, size in enumerate(chunks):
            if lo <= start and stop <= lo + size and start < stop:
                index.append(b)
                local.append(slice(start - lo, stop - lo))
                break
            lo += size
    if len(index) == x.ndim:
        key = block_key(x, index)
        whole = all(
            s.start == 0 and s.stop == c[b] for s, c, b in zip(local, x.chunks, index, strict=True)
        )
        return key if whole else tasks.add(stage, at, _sliced, key, Static(tuple(local)))
    part = x[tuple(slice(start, stop) for start, stop in window)]
    tasks.inputs.append(part)
    keys = [block_key(part, b) for b in grid(part.numblocks)]
    return tasks.add(stage, at, _joined, Static(part.numblocks), keys)


def _sliced(block: Any, local: Static) -> Any:
    return block[local.value]


def _joined(numblocks: Static, blocks: list[Any]) -> Any:
    """The blocks (in row-major order of a grid of ``numblocks``) as one array."""
    from dask.array.core import concatenate3

    def nest(shape: tuple[int, ...], flat: list[Any]) -> Any:
        if len(shape) == 1:
            return flat
        step = len(flat) // shape[0]
        return [nest(shape[1:], flat[k * step : (k + 1) * step]) for k in range(shape[0])]

    return concatenate3(nest(tuple(numblocks.value), blocks))
