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
