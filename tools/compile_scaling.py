"""Compile time against function size (issue 19): prints, for each shape of code in
``tests/opt/scaling.py`` and each size, the seconds offload's IR stages take (checks,
lowering, the common pipeline) and, with ``--numba``, a cold ``compute_s`` and a cold
``compute_p`` (the same plus kernel emission and numba's compile; each of its own copy of
the function, so neither finds the other's kernel).

  python tools/compile_scaling.py                       # IR stages, 10..1000 lines
  python tools/compile_scaling.py --numba --sizes 10,20,30 --shapes divmod-chain
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    from tests.opt.scaling import SHAPES, ir_seconds, load

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sizes", default="10,30,100,300,1000")
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--numba", action="store_true", help="also time a cold compute_s")
    p.add_argument("--limit", type=float, default=120, help="skip larger sizes after this")
    args = p.parse_args()
    import offload as ol
    from offload.diagnostics import OffloadError

    folder = Path(tempfile.mkdtemp(prefix="offload-scaling-"))
    (folder / "p").mkdir()
    ol.compute_s(1, load("float-chain", 2, folder))  # numba's own start-up, once
    ol.compute_p(1, load("float-chain", 3, folder))
    print(
        f"{'shape':14s} {'lines':>6s} {'ir_s':>8s}"
        + (f" {'compute_s':>10s} {'compute_p':>10s}" if args.numba else "")
    )
    for shape in args.shapes.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            fn = load(shape, n, folder)
            try:
                ir = ir_seconds(fn)
            except OffloadError as err:
                print(f"{shape:14s} {n:6d} rejected: {str(err).splitlines()[0][:60]}")
                break
            row = f"{shape:14s} {n:6d} {ir:8.3f}"
            slow = ir > args.limit
            if args.numba:
                t0 = time.perf_counter()
                ol.compute_s(4, load(shape, n, folder))
                cs = time.perf_counter() - t0
                t0 = time.perf_counter()
                ol.compute_p(4, load(shape, n, folder / "p"))
                cp = time.perf_counter() - t0
                row += f" {cs:10.3f} {cp:10.3f}"
                slow = slow or max(cs, cp) > args.limit
            print(row, flush=True)
            if slow:
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
