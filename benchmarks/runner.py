"""``python -m offload bench`` / ``python -m benchmarks.runner``: run, validate, report.

    python -m benchmarks.runner [names ...] [--size tiny|quick|paper]
        [--targets s,p,g,peers|cpu-peers|gpu-peers] [--repeat N] [--iters N] [--out DIR]
        [--bounds-check]

Results go to ``<out>/<device-slug>/`` (default out: benchmarks/results): results.json,
results.md and PNG plots (when matplotlib is installed).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import report, sweep
from benchmarks.measure import measure_peer, measure_target
from benchmarks.peers import peers_for
from benchmarks.suite import ACCELERATE, ALL, HASKELL_GAP
from benchmarks.targets import TARGETS

GROUPS = {"all": tuple(ALL), "haskell-gap": HASKELL_GAP, "accelerate": ACCELERATE}
RESULTS = Path(__file__).resolve().parent / "results"


def _progress(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m offload bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("names", nargs="*", help=f"benchmarks or groups {sorted(GROUPS)} (default all)")
    ap.add_argument("--size", default="quick", choices=["tiny", "quick", "paper"])
    ap.add_argument(
        "--targets",
        default="s,p,g,peers",
        help="comma list of s, p, g (unified memory), gd (device memory), gdf (device memory "
        "and fastmath), peers (= cpu-peers,gpu-peers), cpu-peers, gpu-peers, "
        "py (CPython at every index: tiny size only)",
    )
    ap.add_argument("--repeat", type=int, default=5, help="timed repetitions (median, IQR)")
    ap.add_argument("--iters", type=int, default=None, help="override the iteration count")
    ap.add_argument("--out", default=str(RESULTS), help="results root directory")
    ap.add_argument("--tag", default="", help="suffix for the result file names")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument(
        "--sweep",
        type=int,
        default=0,
        metavar="N",
        help="run each benchmark at N sizes from quick to paper (benchmarks/sweep.py) and "
        "report compute_g over the best GPU peer and over compute_p at each",
    )
    ap.add_argument(
        "--fresh-compile",
        default="",
        help="comma list of GPU targets whose first call is also timed in a fresh process "
        "(kernels from the disk cache)",
    )
    ap.add_argument(
        "--bounds-check",
        action="store_true",
        help="run offload's targets with ol.config.bounds_check on (captured-array reads "
        "checked, IndexError out of bounds), to measure what checking costs",
    )
    return ap.parse_args(argv)


def select(names: list[str]) -> list[str]:
    """Benchmark names from names and group names, in suite order; unknown names rejected."""
    if not names:
        return list(ALL)
    chosen: set[str] = set()
    for n in names:
        if n in GROUPS:
            chosen.update(GROUPS[n])
        elif n in ALL:
            chosen.add(n)
        else:
            raise SystemExit(
                f"unknown benchmark {n!r}; known: {', '.join(ALL)} or {', '.join(GROUPS)}"
            )
    return [n for n in ALL if n in chosen]


def environment() -> dict[str, Any]:
    """Device and versions for the results header."""
    env: dict[str, Any] = {"python": platform.python_version(), "machine": platform.machine(),
                           "cpu": report.cpu_name(), "gpu": None}  # fmt: skip
    for mod in ("numpy", "numba", "numba_cuda", "cupy", "jax", "offload"):
        try:
            env[mod] = getattr(__import__(mod), "__version__", "?")
        except Exception:
            env[mod] = None
    try:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        env["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        env["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
    except Exception:
        pass
    return env


def run_benchmark(
    name: str,
    size: str,
    targets: list[str],
    repeat: int,
    iters: int | None,
    fresh: frozenset[str] = frozenset(),
    params: Any = None,
) -> dict[str, Any]:
    """All configurations of one benchmark: a JSON-ready record (at ``params`` where given,
    else at ``size``)."""
    bench = ALL[name]
    if params is None:
        params = bench.sizes[size]
    if iters is not None and hasattr(params, "iters"):
        params = dataclasses.replace(params, iters=iters)
    t0 = time.perf_counter()
    inputs = bench.make_inputs(params)
    ref = bench.reference(inputs)
    n_iter = bench.iters(params)
    rec: dict[str, Any] = {
        "name": name, "kind": bench.kind, "bound": bench.bound_by, "notes": bench.notes,
        "params": dataclasses.asdict(params), "iters": n_iter,
        "flops_per_iter": bench.flops(params), "bytes_per_iter": bench.bytes(params),
        "floor_per_iter_s": bench.floor(params), "setup_s": time.perf_counter() - t0,
        "configs": [],
    }  # fmt: skip
    for key in targets:
        if key in TARGETS:
            _progress(f"{name}: {TARGETS[key].label}")
            again = (size, iters) if key in fresh else None
            rec["configs"].append(measure_target(bench, TARGETS[key], inputs, ref, repeat, again))
    want_cpu, want_gpu = "cpu-peers" in targets, "gpu-peers" in targets
    for peer in peers_for(name):
        if (peer.on_gpu and want_gpu) or (not peer.on_gpu and want_cpu):
            _progress(f"{name}: peer {peer.name}")
            rec["configs"].append(measure_peer(bench, peer, inputs, ref, repeat))
    report.derive(rec)
    for c in rec["configs"]:
        _progress(f"{name}: {report.one_line(c)}")
    return rec


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns 1 if any configuration FAILED validation or errored."""
    args = parse_args(argv)
    targets: list[str] = []
    for item in args.targets.split(","):
        key = item.strip()
        targets += ["cpu-peers", "gpu-peers"] if key == "peers" else [key]
    bad = [t for t in targets if t not in (*TARGETS, "cpu-peers", "gpu-peers")]
    if bad:
        print(f"unknown target(s) {bad}; use s, p, g, peers, cpu-peers, gpu-peers", file=sys.stderr)
        return 2
    names = select(args.names)
    if args.bounds_check:
        import offload as ol

        ol.config.bounds_check = True
        os.environ["OFFLOAD_BOUNDS_CHECK"] = "1"  # the --fresh-compile processes too
    env = environment()
    if args.sweep:
        return _sweep(args, names, targets, env)
    started = time.perf_counter()
    records = []
    for k, name in enumerate(names, 1):
        _progress(f"({k}/{len(names)}) {name} [{args.size}]")
        fresh = frozenset(t for t in args.fresh_compile.split(",") if t)
        records.append(run_benchmark(name, args.size, targets, args.repeat, args.iters, fresh))
    results = {"env": env, "size": args.size, "targets": targets, "repeat": args.repeat,
               "bounds_check": args.bounds_check,
               "argv": ["bench", *(sys.argv[1:] if argv is None else argv)],
               "wall_s": time.perf_counter() - started, "benchmarks": records}  # fmt: skip
    outdir = Path(args.out) / report.device_slug(env)
    outdir.mkdir(parents=True, exist_ok=True)
    stem = f"results-{args.size}{'-' + args.tag if args.tag else ''}"
    (outdir / f"{stem}.json").write_text(json.dumps(results, indent=1, default=str))
    table = report.markdown(results)
    (outdir / f"{stem}.md").write_text(table)
    notes = [] if args.no_plots else report.plots(results, outdir, stem)
    print(table)
    for n in notes:
        print(n)
    print(f"results: {outdir / stem}.json, .md ({results['wall_s']:.1f} s)")
    failed = [(r["name"], c["config"]) for r in records for c in r["configs"]
              if c["status"] in ("FAILED", "error")]  # fmt: skip
    return 1 if failed else 0


def _sweep(args: argparse.Namespace, names: list[str], targets: list[str], env: Any) -> int:
    """``--sweep N``: each benchmark at N sizes (benchmarks/sweep.py); one JSON, one table,
    one plot."""
    started = time.perf_counter()
    records = []
    for name in names:
        for params in sweep.sweep_params(ALL[name].sizes, args.sweep):
            _progress(f"{name} [{sweep.label(params)}]")
            rec = run_benchmark(name, "sweep", targets, args.repeat, None, params=params)
            rec["size_label"] = sweep.label(params)
            records.append(rec)
    outdir = Path(args.out) / report.device_slug(env)
    outdir.mkdir(parents=True, exist_ok=True)
    stem = f"results-sweep{'-' + args.tag if args.tag else ''}"
    results = {"env": env, "size": "sweep", "sweep": args.sweep, "targets": targets,
               "repeat": args.repeat, "argv": ["bench", *sys.argv[1:]],
               "wall_s": time.perf_counter() - started, "benchmarks": records}  # fmt: skip
    (outdir / f"{stem}.json").write_text(json.dumps(results, indent=1, default=str))
    table = sweep.markdown(records)
    (outdir / f"{stem}.md").write_text(table)
    print(table)
    if not args.no_plots:
        note = sweep.plot(records, outdir / f"{stem}.png")
        if note:
            print(note)
    print(f"results: {outdir / stem}.json, .md ({results['wall_s']:.1f} s)")
    failed = [
        r["name"] for r in records for c in r["configs"] if c["status"] in ("FAILED", "error")
    ]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
