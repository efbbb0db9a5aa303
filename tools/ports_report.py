"""Print how many of the kernel ports in ``tests/ports/kernels.py`` offload accepts today,
and the rule each rejected one hits (the first diagnostic, as the user sees it first).

    python tools/ports_report.py            # counts, then one line per rejection
    python tools/ports_report.py --table    # the REJECTED table, as tests/ports expects it
    python tools/ports_report.py --compile  # also each accepted port's first compute_s and
                                            # compute_p call (compile + run, seconds)

Acceptance here is the frontend's (restriction checks and lowering for the port's rank):
whether the accepted ones compute the original's values is what ``tests/ports`` checks.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

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
    """Each port's first ``compute_s`` and ``compute_p`` call in this process: the
    compilation (checks, lowering, passes, numba) and one run at a small size."""
    import offload as ol

    ol.compute_s(1, _warm_up)  # numba's own start-up, once
    print(f"{'port':24} {'compute_s':>10} {'compute_p':>10}")
    for name in names:
        case = PORTS[name].make(8, np.random.default_rng(0))
        row = []
        for compute in (ol.compute_s, ol.compute_p):
            t0 = time.perf_counter()
            compute(case.shape, case.fn)
            row.append(time.perf_counter() - t0)
        print(f"{name:24} {row[0]:10.2f} {row[1]:10.2f}")


def _warm_up(i):
    return i


if __name__ == "__main__":
    main()
