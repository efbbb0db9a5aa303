"""Host cost of a warm ``compute_*`` call in the API and driver layers alone (CPU only).

The backend is a stand-in whose ``compile``, ``allocate``, ``prepare_captures`` and
``launch`` do (almost) nothing -- ``allocate`` returns preallocated NumPy arrays, so even
NumPy's allocator is out of the picture -- and what is timed is exactly what
``offload/api.py`` and ``offload/driver.py`` do between the user's call and the kernel
launch: backend and options lookup, the dispatch-table entry, re-reading the captures, the
type check of the cached specialisation, ``dtype=``/``out=`` handling, the launch call.
(``benchmarks/lab/overhead.py`` measures the same call on the GPU, with the real backend.)

Cases (``n = 1024``, float32 arrays):

* ``saxpy``: ``compute_g(n, lambda i: alpha * x[i] + y[i])``, a closure over one NumPy
  scalar and two arrays -- the shape of ``overhead.py``'s ``compute_g[device]``;
* ``saxpy,out=``: the same with ``out=`` a preallocated array;
* ``def,3 captures``: a ``def`` reading a global array, a closure scalar and a global int,
  and calling ``math.fabs`` (a module resolved at compile time: checked on every call);
* ``driver.run``: the saxpy closure through ``driver.run`` directly (no API layer);
* ``lambda per call``: the saxpy lambda re-created on every call (a loop body's lambda);
* ``floor``: the stand-in backend's ``allocate``, ``prepare_captures`` and ``launch`` called
  directly, i.e. what is not the API and driver layers (subtract it from the others).

Each case is timed as ``REPEATS`` batches of ``CALLS`` calls; the median and the spread
(min, quartiles, max) of the per-call time in microseconds are printed.

    python benchmarks/lab/warm_path.py [--calls 10000] [--repeats 20] [--profile] [--json PATH]
"""

from __future__ import annotations

import os
import sys

if (
    __name__ == "__main__"
    and sys.path
    and sys.path[0] == os.path.dirname(os.path.abspath(__file__))
):
    # Run as a script, this directory (benchmarks/lab/) comes first on the path: use the
    # repository root instead, so that ``offload`` and ``benchmarks`` import from the checkout.
    sys.path[0] = os.path.dirname(os.path.dirname(sys.path[0]))

import argparse
import cProfile
import json
import math
import pstats
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import offload as ol
from offload import driver, targets
from offload.ir.core import Function
from offload.options import CompileOptions

N = 1024


class NullKernel:
    """A kernel whose launch does nothing."""

    def launch(self, shape: tuple[int, ...], outs: Sequence[Any], captures: Sequence[Any]) -> None:
        pass


class NullBackend:
    """The ``Backend`` protocol with trivial methods: preallocated outputs, captures passed
    through, no-op kernels."""

    name = "null"

    def __init__(self) -> None:
        self._outs: dict[tuple[tuple[int, ...], np.dtype[Any]], np.ndarray[Any, Any]] = {}
        self.compiles = 0

    def compile(self, fn: Function, options: CompileOptions) -> NullKernel:
        self.compiles += 1
        return NullKernel()

    def allocate(self, shape: tuple[int, ...], dtypes: Sequence[np.dtype[Any]]) -> list[Any]:
        outs = []
        for dt in dtypes:
            a = self._outs.get((shape, dt))
            if a is None:
                a = self._outs[shape, dt] = np.empty(shape, dt)
            outs.append(a)
        return outs

    def writable(self, out: Any) -> bool:
        return True

    def prepare_outputs(self, outs: Sequence[Any]) -> None:
        pass

    def prepare_captures(self, captures: Sequence[Any]) -> list[Any]:
        return captures  # type: ignore[return-value]

    def pinned_captures(self, values: Sequence[Any]) -> dict[int, Any]:
        return {}

    def launcher(self, fn: Function, kernel: Any, values: Sequence[Any], general: Any) -> None:
        return None

    def replay_launch(self, kernel: Any, shape: Any, dtypes: Any, values: Any) -> None:
        return None

    def explain(self, fn: Function, options: CompileOptions, shape: tuple[int, ...]) -> str:
        return ""


NULL = NullBackend()

x = np.random.default_rng(0).random(N, dtype=np.float32)
y = np.random.default_rng(1).random(N, dtype=np.float32)
g_arr = np.arange(N, dtype=np.float32)
g_k = 3


def _saxpy() -> Callable[[int], Any]:
    alpha = np.float32(2.0)
    return lambda i: alpha * x[i] + y[i]


def _three_captures() -> Callable[[int], Any]:
    scale = np.float32(0.5)

    def element(i: int) -> Any:
        return math.fabs(g_arr[i]) * scale + g_k

    return element


def cases() -> dict[str, Callable[[], object]]:
    """The timed calls (each returns the call's result)."""
    saxpy = _saxpy()
    three = _three_captures()
    out = np.empty(N, np.float32)
    compute_g = ol.compute_g
    run = driver.run
    shape = (N,)
    alpha = np.float32(2.0)

    def lambda_per_call() -> object:
        return compute_g(N, lambda i: alpha * x[i] + y[i])

    kernel = NullKernel()
    dtypes = [np.dtype(np.float32)]
    captures = [alpha, x, y]

    def floor() -> object:  # what a warm call cannot avoid: the backend's own calls
        outs = NULL.allocate(shape, dtypes)
        kernel.launch(shape, outs, NULL.prepare_captures(captures))
        return outs[0]

    return {
        "floor": floor,
        "saxpy": lambda: compute_g(N, saxpy),
        "saxpy,out=": lambda: compute_g(N, saxpy, out=out),
        "def,3 captures": lambda: compute_g(N, three),
        "driver.run": lambda: run(NULL, saxpy, shape),
        "lambda per call": lambda_per_call,
    }


def _install_null_backend() -> None:
    """Route ``compute_g`` to ``NULL``: replace the API's backend factory, then assign a
    config field so that anything cached from the old configuration is dropped."""
    targets.backend_named = lambda name: NULL  # type: ignore[assignment]
    ol.config.memory = "device"


def per_call_us(fn: Callable[[], object], calls: int, repeats: int) -> list[float]:
    """Microseconds per call, one sample per batch of ``calls``."""
    for _ in range(min(calls, 1000)):
        fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) * 1e6 / calls)
    return out


def _check(calls: dict[str, Callable[[], object]]) -> None:
    want = np.float32(2.0) * x + y
    for name in ("saxpy", "driver.run", "lambda per call"):
        # The null kernel writes nothing: check only what comes back.
        got: Any = calls[name]()
        assert isinstance(got, np.ndarray) and got.shape == want.shape, name
        assert got.dtype == np.float32, (name, got.dtype)
    got = calls["def,3 captures"]()
    assert isinstance(got, np.ndarray) and got.shape == want.shape


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--profile", action="store_true", help="cProfile the saxpy case once")
    ap.add_argument("--json", help="write the summaries here")
    args = ap.parse_args(argv)

    _install_null_backend()
    calls = cases()
    _check(calls)
    results: dict[str, dict[str, float]] = {}
    print(f"{'case':<18} {'median':>8} {'min':>8} {'q1':>8} {'q3':>8} {'max':>8}  (us/call)")
    for name, fn in calls.items():
        xs = per_call_us(fn, args.calls, args.repeats)
        q1, _, q3 = statistics.quantiles(xs, n=4)
        s = {"median": statistics.median(xs), "min": min(xs), "q1": q1, "q3": q3, "max": max(xs)}
        results[name] = s
        print(
            f"{name:<18} {s['median']:8.3f} {s['min']:8.3f} {s['q1']:8.3f} "
            f"{s['q3']:8.3f} {s['max']:8.3f}"
        )
    print(f"compiles: {NULL.compiles} (one per case's specialisation; warm calls add none)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    if args.profile:
        for name in ("saxpy", "saxpy,out="):
            fn = calls[name]
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(args.calls):
                fn()
            prof.disable()
            print(f"\n--- cProfile: {name}, {args.calls} calls ---")
            pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(14)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
