"""What a Dask task needs to run offload on its blocks: the target's backend, the client's
compile options and determinism mode (``Runner``), the array module of a block, and the
``meta`` of a result (so Dask never calls a kernel on an empty array to learn it).

A collective's tasks carry its node's functions to the workers by pickle (Dask does it;
``cloudpickle`` for lambdas and closures), and each task computes an offload node on its
blocks through the graph scheduler of ``offload.acc.graph`` with the client's options.
A worker keeps the first copy of each job it unpickles (``canonical``), so every later
task of that job calls the same function objects and hits offload's caches: the
function is lowered and compiled once per worker process, not once per task. A function
pickled by value loses its file name; the job carries its source text (``sources``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from offload import driver, replay
from offload.acc.base import Context
from offload.acc.nodes import as_source
from offload.backend import Backend
from offload.config import config
from offload.dask.sources import Sources, restore
from offload.options import CompileOptions
from offload.stream import device_backend
from offload.targets import backend_named

_TARGETS = {"s": "cpu-seq", "p": "cpu-par"}


def backend_name(target: str) -> str:
    """The backend of a target letter: ``"s"``, ``"p"`` or ``"g"`` (device mode, or the
    simulator where ``ol.config.gpu_simulator`` is on)."""
    if target == "g":
        return "gpu-sim" if config.gpu_simulator else "gpu-device"
    name = _TARGETS.get(target)
    if name is None:
        raise ValueError(f"target must be 's', 'p' or 'g', got {target!r}")
    return name


def is_dask(x: object) -> bool:
    """Whether ``x`` is a Dask array (tested without importing Dask)."""
    return type(x).__module__.startswith("dask.") and hasattr(x, "chunks") and hasattr(x, "dask")


def meta(backend: str, rank: int, dtype: Any) -> Any:
    """An empty array of ``rank`` and ``dtype`` of the kind a backend's blocks are: CuPy
    for ``gpu-device``, else NumPy."""
    if backend == "gpu-device":
        import cupy

        return cupy.empty((0,) * rank, dtype=dtype)
    return np.empty((0,) * rank, dtype=dtype)


def xp_of(block: Any) -> Any:
    """The array module of a block: CuPy for a CuPy array, else NumPy."""
    if type(block).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


@dataclass(frozen=True)
class Runner:
    """How a task computes an offload node: the backend named by the client's target, with
    the client's compile options and determinism mode (not the worker's ``ol.config``)."""

    backend: str
    options: CompileOptions
    determinism: str

    @classmethod
    def for_target(cls, target: str) -> Runner:
        """The runner of ``target`` with ``ol.config`` as it is now (on the client)."""
        return cls(backend_name(target), config.compile_options(), config.determinism)

    def resolve(self) -> Backend:
        if self.backend == "gpu-device":
            return device_backend()
        return backend_named(self.backend)

    def run(self, node: Any, dtype: Any = None) -> tuple[Any, ...]:
        """``node`` (a delayed tree over blocks, collectives included) computed as
        ``compute_*(node, dtype=dtype)`` computes it, as a tuple of arrays (one per
        component of its result)."""
        ctx = Context(self.resolve(), self.options, self.determinism, run=driver.run)
        out = replay.compute(ctx, node, dtype, None)
        return tuple(out) if isinstance(out, tuple | list) else (out,)

    def meta(self, rank: int, dtype: Any) -> Any:
        return meta(self.backend, rank, dtype)


class Job(Protocol):
    """What a collective's tasks share: its functions and values, named by ``token``,
    with the source text of its functions (``sources``)."""

    @property
    def token(self) -> str: ...

    @property
    def sources(self) -> Sources: ...

    def functions(self) -> tuple[object, ...]:
        """The user's functions the job calls."""
        ...


_J = TypeVar("_J", bound=Job)

JOBS_KEPT = 64
"""Jobs a worker keeps (least recently used dropped)."""
_JOBS: OrderedDict[str, Any] = OrderedDict()
_JOBS_LOCK = threading.Lock()


def job_token(kind: str, *content: object) -> str:
    """A job's name from what it holds (its functions, pickled by value where they are
    not importable, and its values): a later graph of the same functions and values gets
    the same name, so a worker reuses its first copy of the job, whose functions offload
    has already lowered and compiled (``canonical``), instead of lowering them again for
    every ``compute``. Content that does not pickle gets a name of its own. (A captured
    array is hashed on every ``compute``: about 0.5 s a GB.)"""
    import hashlib
    import pickle
    import uuid

    import cloudpickle

    buffers: list[pickle.PickleBuffer] = []
    try:  # (arrays' data out of band: hashed where it lies, not copied into the pickle)
        data = cloudpickle.dumps(content, protocol=5, buffer_callback=buffers.append)
    except Exception:  # dask will report what does not pickle; never the same name
        return f"{kind}-{uuid.uuid4().hex}"
    digest = hashlib.blake2b(data, digest_size=16)
    for buf in buffers:
        try:
            digest.update(buf.raw())
        except BufferError:  # (not contiguous)
            digest.update(bytes(buf))
    return f"{kind}-{digest.hexdigest()}"


def canonical(job: _J) -> _J:
    """The first copy of ``job`` this process saw (see the module docstring), its
    functions' code given their source files back (``sources.restore``)."""
    with _JOBS_LOCK:
        hit = _JOBS.get(job.token)
        if hit is not None:
            _JOBS.move_to_end(job.token)
            return hit  # type: ignore[no-any-return]
        restore(job.sources, *job.functions())
        _JOBS[job.token] = job
        while len(_JOBS) > JOBS_KEPT:
            _JOBS.popitem(last=False)
        return job


def block_source(arrays: tuple[Any, ...] | list[Any]) -> Any:
    """The components of a block as a collective's source: the array, or a tuple of
    arrays as one tuple-valued array (``Zip``)."""
    return arrays[0] if len(arrays) == 1 else as_source(tuple(arrays))


def stand_in_arrays(dtypes: tuple[np.dtype[Any], ...], shape: tuple[int, ...]) -> list[Any]:
    """Arrays of ``shape``, one per dtype, over one element each (zero strides)."""
    return [np.broadcast_to(np.zeros((), dtype=dt), shape) for dt in dtypes]


def stand_ins(dtypes: tuple[np.dtype[Any], ...], shape: tuple[int, ...]) -> Any:
    """A source of ``shape`` and ``dtypes`` over one element per component: what the
    client lowers to check a collective's functions and learn its dtypes."""
    return block_source(stand_in_arrays(dtypes, shape))
