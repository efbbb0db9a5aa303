"""Streaming on one GPU (issue 21): the link's bandwidth, a streamed element function over a
host array several times the memory budget, and the streaming path's overhead when the data
fits (GPU).

Measured in one run:

* ``h2d``/``d2h`` pinned and pageable: CuPy copies of ``--copy-gib`` GiB (best of 3);
* ``streamed xN``: ``ol.compute_g(n, f)`` with ``ol.config.device_memory_limit`` set to
  ``--budget-gib`` and a float32 host input ``--times`` times as large, for ``f`` an
  element-wise map (``x[i] * a + b``) and a 3-point stencil (halos): seconds, GB/s moved
  (input + result bytes / time), and that as a share of the pinned link (in and out overlap
  on a full-duplex link, so the bound is the slower direction: ``max(in/h2d, out/d2h)``);
* ``fits``: the same map over an input that fits, unstreamed (``ol.compute_g``, unified
  mode: the pageable input copied in, a managed result) against ``ol.stream.compute_g``
  (the streamed path forced, its chunks sized as when streaming): the overhead in %;
* every streamed result is checked bit for bit against the unstreamed one on a slice (and
  whole where it fits);
* ``--node-stencil``: ``ol.stencil`` nodes (a 5-point stencil over the input as rows of
  4096, ``clamp`` and ``wrap``; ``offload.stream.stencils``) streamed the same way: GB/s,
  share of the link, and the bits against the unstreamed ``compute_g`` of the whole (where
  the GPU holds it);
* ``--fold``: streamed folds (``offload.stream.collectives``) over float32 host input
  ``--times`` times the budget, reduced on the device chunk by chunk: ``fold_all`` sum of
  the array itself, a dot product ``fold_all(add, 0, zip_with(mul, x, y))`` and a max of a
  map (a combine that does not commute: contiguous partials): seconds, GB/s read from the
  host (input bytes / time) and its share of the pinned host-to-device link, and whether
  the result has the unstreamed ``compute_g``'s bits (checked where the GPU's free memory
  holds the input unstreamed, else ``n/a``).

    python -m benchmarks.lab.stream_bench [--budget-gib 4] [--times 4] [--copy-gib 2]
                                          [--fits-gib 2] [--huge-gib 0] [--fold]
                                          [--json PATH]

``--memory pageable,out,pinned`` times the streamed rows with a fresh result (the default),
with ``out=`` a pageable array written before, and with the input and ``out=`` in
page-locked memory (``cupyx.empty_pinned``: copied by the DMA engine in place).

``--huge-gib N`` adds a streamed map over an N GiB input (larger than the GPU's memory if
the host has room for the input and the result: 2N GiB).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

GIB = 1 << 30


def _best(fn: Callable[[], Any], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _filled(n: int, pinned: bool = False) -> np.ndarray[Any, Any]:
    """``n`` float32 values, not all equal, made at memory speed (random numbers for tens
    of GiB would take longer than the measurement); ``pinned``: in page-locked memory."""
    x = _empty(n, pinned)
    x[:] = np.float32(1.25)
    x[::1021] = np.float32(-3.5)
    x[::4093] = np.float32(7.0625)
    return x


def _empty(n: int, pinned: bool) -> np.ndarray[Any, Any]:
    if not pinned:
        return np.empty(n, np.float32)
    import cupyx

    out: np.ndarray[Any, Any] = cupyx.empty_pinned(n, np.float32)
    return out


def bandwidth(cp: Any, nbytes: int) -> dict[str, float]:
    """GB/s of host<->device copies, pinned and pageable."""
    dev = cp.empty(nbytes, np.uint8)
    pageable = np.ones(nbytes, np.uint8)
    pinned = np.frombuffer(cp.cuda.alloc_pinned_memory(nbytes), np.uint8, nbytes)
    pinned[:] = 1
    sync = cp.cuda.runtime.deviceSynchronize
    out: dict[str, float] = {}
    for name, host in (("pinned", pinned), ("pageable", pageable)):
        h2d = _best(lambda host=host: (dev.set(host), sync()))
        d2h = _best(lambda host=host: (dev.get(out=host), sync()))
        out[f"h2d {name}"] = nbytes / h2d / 1e9
        out[f"d2h {name}"] = nbytes / d2h / 1e9
    return out


def _add(a, b):
    return a + b


def _mul(a, b):
    return a * b


def _biggest(a, b):
    return max(a, b)


def streamed_fold(
    cp: Any, n: int, kind: str, link_in: float, pinned: bool = False
) -> dict[str, Any]:
    """A streamed ``fold_all`` over ``n`` float32 host values in all (``kind``: ``sum``,
    ``dotp`` or ``max``; ``pinned``: the input page-locked), timed through
    ``ol.compute_g`` under the current ``device_memory_limit``; its bits checked against
    the unstreamed call where the GPU's free memory holds the input."""
    import offload as ol
    import offload.stream as stream

    x = _filled(n if kind != "dotp" else n // 2, pinned)
    if kind == "sum":
        tree = ol.fold_all(_add, np.float32(0.0), x)
        inputs = [x]
    elif kind == "dotp":
        y = x[::-1].copy()
        tree = ol.fold_all(_add, np.float32(0.0), ol.zip_with(_mul, x, y))
        inputs = [x, y]
    else:
        a, b = np.float32(1.5), np.float32(0.25)
        tree = ol.fold_all(_biggest, -np.inf, ol.map(lambda v: v * a + b, x))
        inputs = [x]
    moved = sum(v.nbytes for v in inputs)
    plan = stream.plan(tree)
    stream.compute_g(tree)  # warm: compile, pinned arena, rate probe
    start = time.perf_counter()
    got = ol.compute_g(tree)
    seconds = time.perf_counter() - start
    same: bool | None = None
    free = int(cp.cuda.runtime.memGetInfo()[0])
    if 2 * moved < free:  # (the unstreamed reference fits: it must not stream itself)
        limit = ol.config.device_memory_limit
        ol.config.device_memory_limit = None
        try:
            ref = ol.compute_g(tree)  # (a CuPy array in device mode)
            want = np.asarray(ref.get() if hasattr(ref, "get") else ref)
        finally:
            ol.config.device_memory_limit = limit
        host = np.asarray(got.get() if hasattr(got, "get") else got)
        same = host.tobytes() == want.tobytes()
    share = moved / (link_in * 1e9) / seconds
    return {
        "seconds": seconds,
        "GBps": moved / seconds / 1e9,
        "link_share": share,
        "chunks": len(plan.chunks),
        "rows": plan.rows,
        "bits_equal_unstreamed": same,
        "note": f"{seconds:.2f} s, {len(plan.chunks)} chunks of {plan.rows} rows, "
        f"{100 * share:.0f}% of the link, bits equal: {'n/a' if same is None else same}",
    }


def _five_point(get):
    return get(-1, 0) + get(1, 0) + get(0, -1) + get(0, 1) - np.float32(4.0) * get(0, 0)


def streamed_stencil(
    n: int, boundary: str, link_in: float, link_out: float, budget: int
) -> dict[str, Any]:
    """A streamed ``ol.stencil`` over ``n`` float32 as rows of 4096 (``--node-stencil``)."""
    import offload as ol
    import offload.stream as stream

    width = 4096
    x = _filled(n // width * width).reshape(-1, width)
    x[::7] = np.float32(-0.5)  # (rows differ: a wrong halo shows)
    node = ol.stencil(_five_point, x, boundary)
    ol.config.device_memory_limit = budget
    plan = stream.plan(node)
    stream.compute_g(node, rows=plan.rows)  # warm: compile, pinned arena
    start = time.perf_counter()
    y = ol.compute_g(node)
    seconds = time.perf_counter() - start
    bound = max(x.nbytes / (link_in * 1e9), y.nbytes / (link_out * 1e9))
    ol.config.device_memory_limit = None
    try:
        r = ol.compute_g(node)
        want = r.get() if hasattr(r, "get") else np.asarray(r)
        same: Any = y.tobytes() == want.tobytes()
    except MemoryError:
        same = "n/a (does not fit unstreamed)"
    moved = x.nbytes + y.nbytes
    return {
        "seconds": seconds,
        "GBps": moved / seconds / 1e9,
        "link_share": bound / seconds,
        "chunks": len(plan.chunks),
        "rows": plan.rows,
        "bits_equal": same,
        "note": f"{seconds:.2f} s, {len(plan.chunks)} chunks of {plan.rows} rows, "
        f"{100 * bound / seconds:.0f}% of the link, bits equal: {same}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget-gib", type=float, default=4.0)
    parser.add_argument("--times", type=int, default=4)
    parser.add_argument("--copy-gib", type=float, default=2.0)
    parser.add_argument("--fits-gib", type=float, default=2.0)
    parser.add_argument("--huge-gib", type=float, default=0.0)
    parser.add_argument("--fold", action="store_true", help="time streamed fold_all too")
    parser.add_argument(
        "--node-stencil", action="store_true", help="time streamed ol.stencil nodes too"
    )
    parser.add_argument(
        "--only",
        default="map,stencil,sum,dotp,max,fits",
        help="the rows to time, of map,stencil,sum,dotp,max,fits (sum/dotp/max with --fold)",
    )
    parser.add_argument(
        "--memory",
        default="pageable",
        help="comma list of pageable (fresh result), out (out= a written pageable array), "
        "pinned (input and out= page-locked; folds: the input)",
    )
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    import offload as ol
    import offload.stream as stream
    from offload.runtime.gpu import device_info, load_cupy

    cp = load_cupy()
    rows: list[tuple[str, str, str]] = []
    report: dict[str, Any] = {"device": device_info().name}
    bw = bandwidth(cp, int(args.copy_gib * GIB))
    report["bandwidth_GBps"] = bw
    for name, value in bw.items():
        rows.append((name, f"{value:.1f} GB/s", f"{args.copy_gib:g} GiB copies"))
    link_in, link_out = bw["h2d pinned"], bw["d2h pinned"]

    def streamed(
        label: str, n: int, kind: str, auto: bool = True, memory: str = "pageable"
    ) -> None:
        """``auto``: through ``ol.compute_g`` (which decides to stream), else forced.
        ``memory``: ``pageable`` (a fresh result), ``out`` (``out=`` a written pageable
        array) or ``pinned`` (the input and ``out=`` page-locked)."""
        x = _filled(n, memory == "pinned")
        out = None
        if memory != "pageable":
            out = _empty(n, memory == "pinned")
            out[:] = 0
        a, b = np.float32(1.5), np.float32(0.25)

        def mapped(i):
            return x[i] * a + b

        def stencil(i):
            if 0 < i < n - 1:
                return x[i - 1] + x[i] + x[i + 1]
            return x[i]

        f = mapped if kind == "map" else stencil
        plan = stream.plan(n, f)
        stream.compute_g(n, f, out=out)  # warm: compile, pinned arena, rate probe
        start = time.perf_counter()
        y = ol.compute_g(n, f, out=out) if auto else stream.compute_g(n, f, out=out)
        seconds = time.perf_counter() - start
        moved = x.nbytes + y.nbytes
        bound = max(x.nbytes / (link_in * 1e9), y.nbytes / (link_out * 1e9))
        check = slice(0, min(n, 1 << 24))
        want = ol.compute_s(check.stop, f)
        same = y[check].tobytes() == want.tobytes()
        if memory != "pageable":
            label += f" ({memory})"
        rows.append(
            (
                f"{label} {kind}",
                f"{moved / seconds / 1e9:.1f} GB/s",
                f"{seconds:.2f} s, {len(plan.chunks)} chunks of {plan.rows} rows, "
                f"{100 * bound / seconds:.0f}% of the link, bits equal: {same}",
            )
        )
        report[f"{label} {kind}"] = {
            "seconds": seconds,
            "GBps": moved / seconds / 1e9,
            "link_share": bound / seconds,
            "chunks": len(plan.chunks),
            "rows": plan.rows,
            "bits_equal_prefix": same,
        }

    budget = int(args.budget_gib * GIB)
    ol.config.device_memory_limit = budget
    n = int(args.times * budget) // 4
    only = set(args.only.split(","))
    memories = args.memory.split(",")
    for memory in memories:
        for kind in [k for k in ("map", "stencil") if k in only]:
            streamed(f"streamed x{args.times}", n, kind, memory=memory)
    if args.node_stencil:
        for boundary in ("clamp", "wrap"):
            label = f"streamed x{args.times} ol.stencil {boundary}"
            got = streamed_stencil(n, boundary, link_in, link_out, budget)
            rows.append((label, f"{got['GBps']:.1f} GB/s", got.pop("note")))
            report[label] = got
            ol.config.device_memory_limit = budget
    if args.fold:
        for memory in [m for m in memories if m != "out"]:
            for kind in [k for k in ("sum", "dotp", "max") if k in only]:
                folded = streamed_fold(cp, n, kind, link_in, memory == "pinned")
                label = f"streamed x{args.times} fold {kind}" + (
                    f" ({memory})" if memory != "pageable" else ""
                )
                rows.append((label, f"{folded['GBps']:.1f} GB/s", folded.pop("note")))
                report[label] = folded
    if args.huge_gib:
        ol.config.device_memory_limit = None
        streamed(f"streamed {args.huge_gib:g} GiB", int(args.huge_gib * GIB) // 4, "map", False)

    if "fits" in only:
        # The data fits: unstreamed against the forced streamed path.
        ol.config.device_memory_limit = None
        n = int(args.fits_gib * GIB) // 4
        x = _filled(n)

        def fits(i):
            return x[i] * np.float32(1.5) + np.float32(0.25)

        plain = ol.compute_g(n, fits)
        forced = stream.compute_g(n, fits)
        same = plain.tobytes() == forced.tobytes()
        t_plain = _best(lambda: ol.compute_g(n, fits), 5)
        t_stream = _best(lambda: stream.compute_g(n, fits), 5)
        overhead = 100 * (t_stream / t_plain - 1)
        rows.append(("fits: compute_g", f"{t_plain * 1e3:.1f} ms", f"{args.fits_gib:g} GiB in"))
        rows.append(
            (
                "fits: stream.compute_g",
                f"{t_stream * 1e3:.1f} ms",
                f"overhead {overhead:+.1f}%, {len(stream.plan(n, fits).chunks)} chunks, "
                f"bits equal: {same}",
            )
        )
        report["fits"] = {
            "plain_s": t_plain,
            "stream_s": t_stream,
            "overhead_pct": overhead,
            "bits_equal": same,
        }

    width = max(len(r[0]) for r in rows)
    print(f"stream_bench on {report['device']}")
    for name, value, note in rows:
        print(f"  {name:<{width}}  {value:>12}  {note}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)


if __name__ == "__main__":
    main()
