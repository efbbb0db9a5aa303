"""Sequences: a stream of arrays consumed by a fold (the sequences of "Functional Array
Streams", Madsen and Filinski, in the part that falls out of the collectives).

    def rows_of(path):                     # e.g. a file read a block of rows at a time
        with open(path, "rb") as fh:
            while block := fh.read(1 << 28):
                yield np.frombuffer(block, np.float32)

    total = ol.stream.fold_seq(add, 0.0, rows_of("big.f32"), each=lambda a: ol.map(sq, a))

Each item of the sequence is an array (or a tuple of arrays of one shape: struct of
arrays); ``each`` (optional) makes the delayed array to fold from it (a ``map``, a
``zip_with`` of a tuple's arrays, ...). Item ``k`` is folded whole by the target's
``fold_all`` -- on the GPU, a device-mode call: the item copied in (staged through pinned
memory when large), reduced there, one partial back -- while a host thread takes item
``k + 1`` from the sequence (reading a file, decoding, ...), so producing the next item
overlaps folding this one. The partials are folded in sequence order with ``f`` by
``compute_s``, so the result depends on how the sequence cuts the data, never on timing:
for one cutting it is the same bits on every run. ``z`` must be neutral for ``f`` (it
enters every item's fold). An empty sequence gives ``z`` as a 0-d array (NumPy's type for
it: a Python float is float64).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from offload import driver, replay
from offload.acc.base import Context
from offload.acc.fold import fold1
from offload.acc.fold import fold_all as fold_all_node
from offload.config import config
from offload.diagnostics import OffloadError
from offload.stream.device import device_backend
from offload.targets import backend_named

_DONE = object()


def _next(it: Iterator[Any]) -> Any:
    return next(it, _DONE)


def fold_seq(
    f: Callable[..., Any],
    z: Any,
    seq: Iterable[Any],
    *,
    each: Callable[[Any], Any] | None = None,
    target: str = "g",
) -> Any:
    """``fold_all(f, z, ...)`` over every element of every item of ``seq`` (module
    docstring): a 0-d NumPy array, or a tuple of them for a tuple-valued fold.
    ``target``: ``"s"``, ``"p"`` or ``"g"`` (``compute_s``/``compute_p``/``compute_g``
    in device mode for each item)."""
    compute = _computer(target)
    partials: list[tuple[Any, ...]] = []
    it = iter(seq)
    with ThreadPoolExecutor(1, thread_name_prefix="offload-seq") as pool:
        ahead: Future[Any] = pool.submit(_next, it)
        while True:
            item = ahead.result()
            if item is _DONE:
                break
            ahead = pool.submit(_next, it)  # the next item is made while this one folds
            src = each(item) if each is not None else item
            out = compute(fold_all_node(f, z, src))
            outs = out if isinstance(out, tuple | list) else (out,)
            partials.append(tuple(_host(o) for o in outs))
    if not partials:
        return np.asarray(z) if not isinstance(z, tuple) else tuple(np.asarray(v) for v in z)
    if len(partials) == 1:
        one = partials[0]
        return one[0] if len(one) == 1 else one
    stacked = tuple(np.stack([p[c] for p in partials]) for c in range(len(partials[0])))
    out = _computer("s")(fold1(f, stacked[0] if len(stacked) == 1 else stacked))
    return out[0] if isinstance(out, tuple | list) and len(out) == 1 else out


_BACKENDS = {"s": "cpu-seq", "p": "cpu-par"}


def _computer(target: str) -> Callable[[Any], Any]:
    """How an item's fold is computed: the target's backend with ``ol.config``'s options;
    on the GPU in device mode whatever ``ol.config.memory`` says (the partial stays on the
    device until it is copied back: a few bytes), the simulator where it is on."""
    if target == "g":
        backend = backend_named("gpu-sim") if config.gpu_simulator else device_backend()
    elif target in _BACKENDS:
        backend = backend_named(_BACKENDS[target])
    else:
        raise ValueError(f"target must be 's', 'p' or 'g', got {target!r}")
    ctx = Context(backend, config.compile_options(), config.determinism, run=driver.run)
    return lambda node: replay.compute(ctx, node, None, None)


def _host(x: Any) -> Any:
    """A partial as a host 0-d array (a device result copied back: a few bytes)."""
    if isinstance(x, np.ndarray):
        return x
    get = getattr(x, "get", None)
    if get is None:
        raise OffloadError(f"fold_seq: a partial of type {type(x).__name__} is not an array")
    return np.asarray(get())
