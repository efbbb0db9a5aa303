"""numba peers: the benchmark's own element function, compiled by ``numba.njit``, in the loop
a numba user writes around it -- ``for`` (``numba``) or ``prange`` over the leading axis
(``numba-parallel``) -- with each captured value passed as an argument.

This is the CPU comparison issue 20 asks for: ``compute_s``/``compute_p`` against
``njit``/``njit(parallel=True)`` loops over the same element function. The element
function's source is rewritten once so that its free variables (the arrays and scalars it
captures) become trailing parameters, and the plain Python functions it calls (e.g.
blackscholes' ``cndf``) are jitted the same way; every call reads the captured values
again, so a ping-pong that rebinds its source array works as with ``compute_*``. The first
call of a benchmark run compiles (numba's own cost, outside the timed region like every
peer's preparation). Results follow numba's typing (not NumPy 2's); each benchmark's
validation decides whether they are right.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import textwrap
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.peers.base import Outputs, Peer

_counter = itertools.count()


def _free_as_params(fn: types.FunctionType, jit: Callable[[Any], Any]) -> Any:
    """``fn`` recompiled with its free variables as trailing parameters and njit-ed; the
    plain functions among its globals are jitted the same way."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    fdef = tree.body[0]
    assert isinstance(fdef, ast.FunctionDef)
    fdef.decorator_list = []
    fdef.returns = None
    for a in fdef.args.args:
        a.annotation = None
    fdef.args.args += [ast.arg(name) for name in fn.__code__.co_freevars]
    fdef.name = f"_numba_{fdef.name}_{next(_counter)}"
    ast.fix_missing_locations(tree)
    namespace: dict[str, Any] = {}
    for name, value in fn.__globals__.items():
        if isinstance(value, types.FunctionType) and name in fn.__code__.co_names:
            namespace[name] = _helper(value, jit)
        else:
            namespace[name] = value
    exec(compile(tree, f"<numba peer {fn.__qualname__}>", "exec"), namespace)
    return jit(namespace[fdef.name])


_HELPERS: dict[types.CodeType, Any] = {}


def _helper(fn: types.FunctionType, jit: Callable[[Any], Any]) -> Any:
    got = _HELPERS.get(fn.__code__)
    if got is None:
        got = _HELPERS[fn.__code__] = (
            _free_as_params(fn, jit) if not fn.__code__.co_freevars else fn
        )
    return got


class NumbaCompute:
    """A ``Compute`` (``benchmarks.suite.common``) running element functions in numba loops."""

    def __init__(self, parallel: bool) -> None:
        self.parallel = parallel
        self._loops: dict[tuple[types.CodeType, int], tuple[Any, Any]] = {}

    def __call__(
        self, shape: Any, fn: Any, *, dtype: Any = None, out: Any = None
    ) -> Any:  # the Compute protocol
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        key = (fn.__code__, len(shape))
        found = self._loops.get(key)
        if found is None:
            found = self._loops[key] = self._build(fn, len(shape))
        elem, loop = found
        values = tuple(c.cell_contents for c in fn.__closure__ or ())
        if out is None:
            sample = elem(*([0] * len(shape)), *values)
            samples = sample if isinstance(sample, tuple) else (sample,)
            dts = [np.asarray(s).dtype for s in samples]
            if dtype is not None:
                dts = [np.dtype(dtype)] * len(dts)
            outs = tuple(np.empty(shape, dt) for dt in dts)
        else:
            outs = out if isinstance(out, tuple) else (out,)
        loop(*outs, *values)
        if out is not None:
            return out
        return outs if len(outs) > 1 else outs[0]

    def _build(self, fn: types.FunctionType, rank: int) -> tuple[Any, Any]:
        import numba

        values = tuple(c.cell_contents for c in fn.__closure__ or ())
        for name, v in zip(fn.__code__.co_freevars, values, strict=True):
            if callable(v) and not isinstance(v, np.ndarray):
                raise TypeError(
                    f"numba peer: {fn.__name__} calls the closure {name!r}, which numba "
                    "cannot take as an argument (a numba user restructures the code)"
                )
        elem = _free_as_params(fn, numba.njit)
        sample = elem(*([0] * rank), *values)  # the result's arity (index 0 exists)
        nres = len(sample) if isinstance(sample, tuple) else 1
        idx = [f"i{a}" for a in range(rank)]
        caps = [f"c{k}" for k in range(len(values))]
        outs = [f"o{r}" for r in range(nres)]
        lines = [f"def loop({', '.join(outs + caps)}):"]
        for a, i in enumerate(idx):
            rng = "prange" if a == 0 and self.parallel else "range"
            lines.append(f"{'    ' * (a + 1)}for {i} in {rng}({outs[0]}.shape[{a}]):")
        body = "    " * (rank + 1)
        at = ", ".join(idx)
        lines.append(f"{body}r = elem({', '.join(idx + caps)})")
        if nres == 1:
            lines.append(f"{body}o0[{at}] = r")
        else:
            lines += [f"{body}o{r}[{at}] = r[{r}]" for r in range(nres)]
        namespace: dict[str, Any] = {"elem": elem, "prange": numba.prange}
        exec("\n".join(lines) + "\n", namespace)
        loop = numba.njit(parallel=self.parallel)(namespace["loop"])
        return elem, loop


def _peer(name: str, parallel: bool, bench_name: str) -> Peer:
    def prepare(inputs: dict[str, Any]) -> Callable[[], Outputs]:
        from benchmarks.suite import ALL

        bound = ALL[bench_name].bind(inputs)
        compute = NumbaCompute(parallel)
        return lambda: bound.run(compute)

    return Peer(name, on_gpu=False, prepare=prepare, needs=("numba",))


def peers(bench_name: str) -> list[Peer]:
    """The two numba peers of a benchmark (none for one in collective form)."""
    from benchmarks.suite import ALL

    if ALL[bench_name].form != "element":
        return []
    return [_peer("numba", False, bench_name), _peer("numba-parallel", True, bench_name)]
