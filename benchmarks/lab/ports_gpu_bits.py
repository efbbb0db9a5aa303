"""Every accepted port (tests/ports) on ``compute_g`` against ``compute_s``, bit for bit (GPU).

Prints one line per port whose GPU result differs from the CPU's: how many elements and
the largest difference in ulps; then ``compute_g`` with ``disabled_passes`` set to each GPU
pass in turn for those ports, to name a pass that changes the bits.

    python -m benchmarks.lab.ports_gpu_bits [--n 64]
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

import offload as ol
from tests.ports.kernels import PORTS
from tests.ports.test_ports import REJECTED

PASSES = ["hoist", "narrow", "select", "divmod", "stage", "unroll", "licm", "jam", "reroll"]


def _diff(got: Any, want: Any) -> tuple[int, float]:
    got = np.asarray(got.get() if hasattr(got, "get") else got)
    want = np.asarray(want)
    if got.dtype.kind != "f":
        return int((got != want).sum()), 0.0
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    bad = int((~same).sum())
    if not bad:
        return 0, 0.0
    with np.errstate(all="ignore"):
        ulp = np.spacing(np.abs(want).astype(want.dtype))
        d = np.abs(got.astype(np.float64) - want.astype(np.float64)) / ulp
    return bad, float(np.nanmax(np.where(same, 0.0, d)))


def _outs(x: Any) -> list[Any]:
    return list(x) if isinstance(x, tuple) else [x]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=64)
    args = ap.parse_args()
    differing = []
    for name, port in PORTS.items():
        if name in REJECTED:
            continue
        case = port.make(args.n, np.random.default_rng(0))
        try:
            s = _outs(ol.compute_s(case.shape, case.fn))
            g = _outs(ol.compute_g(case.shape, case.fn))
        except Exception as e:  # reported: a probe, not a test
            print(f"{name}: {type(e).__name__}: {str(e)[:160]}")
            continue
        for k, (gs, ss) in enumerate(zip(g, s, strict=True)):
            bad, ulps = _diff(gs, ss)
            if bad:
                differing.append(name)
                print(f"{name}[{k}]: {bad} of {np.size(ss)} differ, max {ulps:.1f} ulp")
    print(f"== {len(set(differing))} ports differ from compute_s on compute_g")
    for name in sorted(set(differing)):
        case = PORTS[name].make(args.n, np.random.default_rng(0))
        s = _outs(ol.compute_s(case.shape, case.fn))
        row = []
        for p in PASSES:
            ol.config.disabled_passes = frozenset({p})
            try:
                g = _outs(ol.compute_g(case.shape, case.fn))
                bad = sum(_diff(gs, ss)[0] for gs, ss in zip(g, s, strict=True))
                row.append(f"-{p}:{bad}")
            except Exception as e:  # reported
                row.append(f"-{p}:{type(e).__name__}")
        ol.config.disabled_passes = frozenset()
        print(f"{name}: " + " ".join(row))


if __name__ == "__main__":
    main()
