"""``compute_p`` against ``compute_s`` on the suite, call by call (issue 18 item 6: "never
more than 10% slower than compute_s on the suite at quick size on a 2-core machine, loaded
or not").

The runner times all of one target's calls, then the other's, and only a few of them: on
a loaded machine the two see different contention, and the first calls of ``compute_p``
are its thread choice measuring both ways (``offload.cpu.threads``). Here each benchmark's
calls alternate, ``compute_s`` then ``compute_p``, after ``--warm`` alternations that are
not timed, so both run beside the same load, and ``compute_p``'s settled choice is timed.
``--load K`` runs K busy processes (a Python spin loop each) for the whole measurement;
``--bursty K`` runs K processes busy and asleep by turns (``BURST``) instead.

    python -m benchmarks.lab.p_vs_s [--size quick] [--repeat 40] [--warm 40] [--load 2]
                                    [--bursty 2] [NAMES]

Prints, per benchmark, the median seconds of each target and ``s/p`` (above 1:
``compute_p`` faster; the target is at least 0.9), the same ratio of the means (``mean
s/p``: the total time of the same number of calls), then the smallest of each. Beside
busy processes the calls' times are two-humped (3 runnable threads on 2 cores: a call of
10 ms is preempted for a time slice or not), and the median of either target may land in
either hump: volume-rendering measured a median ``s/p`` of 0.71 and 0.93 in two runs of the
same code beside ``--load 2`` (30 calls each), where its launches took the same time on
both targets (one thread each); and a short call's mean moves with the few calls a time
slice stopped (4 ms against 65 µs for ``sum``), on either target: take many calls
(``--repeat 200``). ``p launches all/one``: the timed ``compute_p`` calls' kernel launches
on all threads and on one (``ThreadChoice.pick``'s choices; e.g. a fold's last stage,
launched without a choice, is not counted).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import offload as ol
from benchmarks.suite import ALL
from offload.cpu.threads import ThreadChoice

SPIN = "while True: pass"
BURST = """\
import random, time
random.seed({seed})
while True:
    end = time.perf_counter() + random.uniform(0.001, 0.02)
    while time.perf_counter() < end:
        pass
    time.sleep(random.uniform(0.001, 0.02))
"""
"""A bursty load: busy for 1-20 ms, asleep for 1-20 ms (a CI run's compiles and tests)."""


LAUNCHES = {"all": 0, "one": 0}
"""The timed ``compute_p`` calls' launches on all threads and on one (``counted``)."""


def counted(pick: Any) -> Any:
    """``ThreadChoice.pick`` that also counts its choices into ``LAUNCHES``."""

    def pick_counted(self: ThreadChoice, elements: int) -> int:
        threads: int = pick(self, elements)
        LAUNCHES["all" if threads > 1 else "one"] += 1
        return threads

    return pick_counted


def measure(name: str, size: str, repeat: int, warm: int) -> dict[str, Any]:
    """Alternating ``compute_s``/``compute_p`` calls of one benchmark: medians and ratio,
    and how many of the timed ``compute_p`` calls' launches ran on all threads."""
    bench = ALL[name]
    params = bench.sizes[size]
    run = bench.bind(bench.make_inputs(params)).run
    for _ in range(warm):
        run(ol.compute_s)
        run(ol.compute_p)
    s: list[float] = []
    p: list[float] = []
    pick = ThreadChoice.pick
    LAUNCHES.update(all=0, one=0)
    for _ in range(repeat):
        t0 = time.perf_counter()
        run(ol.compute_s)
        t1 = time.perf_counter()
        ThreadChoice.pick = counted(pick)  # type: ignore[method-assign]
        try:
            run(ol.compute_p)
        finally:
            ThreadChoice.pick = pick  # type: ignore[method-assign]
        t2 = time.perf_counter()
        s.append(t1 - t0)
        p.append(t2 - t1)
    ms, mp = statistics.median(s), statistics.median(p)
    mean = statistics.mean(s) / statistics.mean(p)
    return {
        "name": name,
        "s": ms,
        "p": mp,
        "s_over_p": ms / mp,
        "mean_s_over_p": mean,
        "launches_all": LAUNCHES["all"],
        "launches_one": LAUNCHES["one"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", default=list(ALL))
    ap.add_argument("--size", default="quick")
    ap.add_argument("--repeat", type=int, default=40)
    ap.add_argument("--warm", type=int, default=40)
    ap.add_argument("--load", type=int, default=0, help="busy processes beside the run")
    ap.add_argument("--bursty", type=int, default=0, help="bursty processes beside the run")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    programs = [SPIN] * args.load + [BURST.format(seed=k) for k in range(args.bursty)]
    spinners = [subprocess.Popen([sys.executable, "-c", text]) for text in programs]
    try:
        if spinners:
            time.sleep(2.0)
        rows = [measure(n, args.size, args.repeat, args.warm) for n in args.names]
        load = os.getloadavg()[0]
    finally:
        for proc in spinners:
            proc.kill()
    print(f"== compute_p against compute_s, {args.size}, {args.load} busy processes, "
          f"{args.bursty} bursty, "
          f"{os.cpu_count()} cores, load {load:.2f} ==")  # fmt: skip
    print("| benchmark | compute_s | compute_p | s/p | mean s/p | p launches all/one |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        s_us, p_us = r["s"] * 1e6, r["p"] * 1e6
        print(
            f"| {r['name']} | {s_us:.1f} µs | {p_us:.1f} µs | {r['s_over_p']:.3f} "
            f"| {r['mean_s_over_p']:.3f} | {r['launches_all']}/{r['launches_one']} |"
        )
    for key, label in (("s_over_p", "s/p"), ("mean_s_over_p", "mean s/p")):
        worst = min(rows, key=lambda r: r[key])
        print(f"lowest {label}: {worst[key]:.3f} ({worst['name']}; target >= 0.9)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            record = {"size": args.size, "load": args.load, "bursty": args.bursty, "rows": rows}
            json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
