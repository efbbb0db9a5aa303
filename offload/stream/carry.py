"""A streamed ``fold_all``'s first-stage partials, carried chunk after chunk
(``offload.stream.collectives`` says what they are), for a fold of numbers or of flat
tuples of numbers, any number of them (struct of arrays: one partials array a
component).

A strided stage's partials are continued by an element function over ``t < p``
(``continued``): partial ``t`` resumes its loop over the chunk's elements ``= t (mod p)``,
in order -- ``Partials``' loop. The frontend compiles that function from its source, so it is
written out for the fold's arity (``offload.frontend.generated``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from offload import driver
from offload.acc.fold import Fold, Partials
from offload.acc.nodes import Leaf, as_source
from offload.acc.plan import Stage
from offload.backend import Backend
from offload.config import config
from offload.diagnostics import OffloadError
from offload.frontend import generated
from offload.stream.window import Block


def continued(
    f: Callable[..., Any], acc: Sequence[Any], block: Sequence[Any], first: int, p: int
) -> Callable[[int], Any]:
    """The element function (over ``t < p``) that continues strided partial ``t`` from
    ``acc[k][t]`` (one array a component) over its elements in ``block`` (the chunk's
    arrays, a component each), the run of the flat source from element ``first``: those
    ``= t (mod p)``, in order -- the loop of ``Partials`` resumed."""
    make = generated.factory("make", _continued_text(len(acc)))
    step: Callable[[int], Any] = make(f, *acc, *block, first, p)
    return step


def _continued_text(m: int) -> str:
    """``continued``'s factory for ``m`` components (the language has no ``*args``)."""

    def value(name: str, at: str) -> str:
        items = [f"{name}{k}[{at}]" for k in range(m)]
        return items[0] if m == 1 else f"({', '.join(items)})"

    acc, b = generated.params("acc", m), generated.params("b", m)
    return (
        f"def make(f, {acc}, {b}, first, p):\n"
        "    m = int(b0.shape[0])\n\n"
        "    def step(t):\n"
        f"        a = {value('acc', 't')}\n"
        "        for k in range((t - first) % p, m, p):\n"
        f"            a = f(a, {value('b', 'k')})\n"
        "        return a\n\n"
        "    return step\n"
    )


def _source(arrays: Sequence[Any]) -> Any:
    """Arrays (a component each) as a node's source: one array, or a tuple as a ``Zip``."""
    return Leaf(arrays[0]) if len(arrays) == 1 else as_source(tuple(arrays))


def _out(arrays: Sequence[Any]) -> Any:
    """Partials arrays as ``out=``: one array, or the tuple."""
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


class Carry:
    """The first stage's partials of a ``fold_all``, chunk after chunk (an
    ``execute.Reduce``). On the GPU each call runs on its chunk's stream, after the
    previous chunk's kernels where a strided stage continues their partials. The partials
    live in two sets of device buffers allocated once (``xp``: NumPy in the simulator,
    CuPy on the GPU), the current and the next, an array a component."""

    def __init__(
        self,
        fold: Fold,
        stage: Stage,
        width: int,
        dtypes: Sequence[Any],
        *,
        backend: Backend,
        cp: Any,
    ) -> None:
        self.fold = fold
        self.stage = stage
        self.width = width
        """Elements per row of the producer (a chunk of rows is a run of elements)."""
        self.backend = backend
        self.cp = cp
        self.options = config.compile_options()
        xp = np if cp is None else cp
        self.dtypes = tuple(np.dtype(dt) for dt in dtypes)
        self.currents: list[Any] = [xp.empty(stage.p, dt) for dt in self.dtypes]
        """The partials so far, a component each."""
        self.spares: list[Any] | None = (
            [xp.empty(stage.p, dt) for dt in self.dtypes] if stage.strided else None
        )
        self.event: Any = None
        """The last strided kernel's completion (GPU)."""

    @property
    def current(self) -> Any:
        """The partials so far: an array, or a tuple of them for a fold of tuples."""
        return _out(self.currents)

    @classmethod
    def of(cls, sf: Any, call: Any, p: Any, cp: Any) -> Carry:
        """The carry of a prepared ``fold_all`` (``sf``: a ``StreamedFold``, ``call`` its
        ``StreamedCall``, ``p`` the prepared call; ``cp``: CuPy on the GPU, else
        ``None``)."""
        fold, st = sf.fold, call.first
        leaves = [np.empty(1, dt) for dt in p.dtypes]
        probe = Partials(fold.f, fold.z, _source(leaves), 1, 1, 1, True, st.lanes)
        width = math.prod(call.shape[1:])
        return cls(fold, st, width, probe.dtypes, backend=p.backend, cp=cp)

    def __call__(self, block: Block, results: Sequence[Any]) -> None:
        (lo, _), *_ = block
        flats = [r.reshape(-1) for r in results]
        first, st = lo * self.width, self.stage
        if not st.strided:  # (chunks start at multiples of c: independent partials)
            if first % st.c:
                raise OffloadError(f"internal: a chunk starts inside a partial ({first})")
            t0 = first // st.c
            t1 = t0 + -(-flats[0].shape[0] // st.c)
            self.launch(flats, first, None, [c[t0:t1] for c in self.currents])
            return
        stream = self.cp.cuda.get_current_stream() if self.cp is not None else None
        if stream is not None and self.event is not None:
            stream.wait_event(self.event)  # the partials the previous chunk left
        if first == 0:
            if flats[0].shape[0] < st.p:
                raise OffloadError("internal: the first chunk must hold every partial's start")
            self.launch(flats, 0, None, self.currents)
        else:
            assert self.spares is not None
            self.launch(flats, first, self.currents, self.spares)
            self.spares, self.currents = self.currents, self.spares
        if stream is not None:
            self.event = stream.record()

    def launch(
        self, flats: Sequence[Any], first: int, acc: Sequence[Any] | None, out: Sequence[Any]
    ) -> None:
        """The kernel of one chunk (``flats``: the flat source's elements from ``first``,
        a component each) into ``out``: the stage's partials from ``z`` (``acc`` is
        ``None``: contiguous partials, or the first chunk's strided ones), else the strided
        partials ``acc`` continued (``continued``)."""
        st = self.stage
        m, f, z = int(flats[0].shape[0]), self.fold.f, self.fold.z
        target: Any
        if acc is None:
            p = int(out[0].shape[0])
            target = Partials(f, z, _source(flats), m, p, st.c, st.strided, st.lanes)
        else:
            target = continued(f, acc, flats, first, st.p)
        shape = tuple(int(n) for n in out[0].shape)
        dtype = self.dtypes[0] if len(out) == 1 else self.dtypes
        driver.run(self.backend, target, shape, dtype, _out(out), self.options)
