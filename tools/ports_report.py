"""Print how many of the kernel ports in ``tests/ports/kernels.py`` offload accepts today,
and the rule each rejected one hits (the first diagnostic, as the user sees it first).

    python tools/ports_report.py            # counts, then one line per rejection
    python tools/ports_report.py --table    # the REJECTED table, as tests/ports expects it
    python tools/ports_report.py --compile  # also each accepted port's cold compile on
                                            # compute_s and compute_p (seconds)

Acceptance here is the frontend's (restriction checks and lowering for the port's rank):
whether the accepted ones compute the original's values is what ``tests/ports`` checks.

``--compile`` times, for each accepted port and each of ``compute_s`` and ``compute_p``, the
first call in a fresh Python process with an empty ``OFFLOAD_CACHE_DIR``
(``tools/compile_scaling.py``'s ``cold_seconds``): checks, lowering, passes, kernel emission,
numba's compile and one launch at ``make(8)``'s size, after numba's start-up (not timed).
The ``compute_p`` column is the parallel (``cpu-par``) kernel's compile: at this size
``ThreadChoice`` would run the ``cpu-seq`` kernel, so the timing process makes it pick all
threads. Each cell is its own process (about 2 s of start-up each, not counted).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from offload.diagnostics import OffloadError
from offload.lowering import check_and_lower
from tests.ports.kernels import PORTS


def classify() -> dict[str, OffloadError | None]:
    """Port name -> the error its element function is rejected with (``None``: accepted)."""
    out: dict[str, OffloadError | None] = {}
    for name, port in sorted(PORTS.items()):
        case = port.make(4, np.random.default_rng(0))
        try:
            check_and_lower(case.fn, len(case.shape))
        except OffloadError as err:
            out[name] = err
        else:
            out[name] = None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", action="store_true", help="print the REJECTED table")
    parser.add_argument("--compile", action="store_true", help="time first calls")
    args = parser.parse_args()
    result = classify()
    rejected = {k: e for k, e in result.items() if e is not None}
    if args.table:
        print("REJECTED = {")
        for name, err in rejected.items():
            print(f'    "{name}": "{err.diagnostics[0].rule}",')
        print("}")
        return
    print(
        f"ports: {len(result)}  accepted: {len(result) - len(rejected)}  rejected: {len(rejected)}"
    )
    for name, err in rejected.items():
        d = err.diagnostics[0]
        where = f"line {d.span.line}" if d.span is not None else "no location"
        print(f"  {name:24} [{d.rule}] {d.message} ({where}; {PORTS[name].origin})")
    if args.compile:
        compile_times([k for k, e in result.items() if e is None])


def compile_times(names: list[str]) -> None:
    """Each port's cold compile on ``compute_s`` and on ``compute_p`` (its parallel
    kernel), each in a fresh process (see the module doc), then the totals."""
    from compile_scaling import cold_seconds

    print(f"{'port':24} {'compute_s':>10} {'compute_p':>10}")
    total = [0.0, 0.0]
    for name in names:
        row = [cold_seconds(t, "ports_report:timing_case", name) for t in "sp"]
        total = [a + b for a, b in zip(total, row, strict=True)]
        print(f"{name:24} {row[0]:10.2f} {row[1]:10.2f}", flush=True)
    print(f"{'total':24} {total[0]:10.2f} {total[1]:10.2f}")


def timing_case(name: str, _folder: str) -> tuple[tuple[int, ...], Callable[..., Any]]:
    """``cold_seconds``'s factory: the shape and element function of port ``name``."""
    case = PORTS[name].make(8, np.random.default_rng(0))
    return case.shape, case.fn


if __name__ == "__main__":
    main()
