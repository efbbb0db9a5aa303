"""Compile time of the hoist pass against function size: for each shape of
``tests/opt/scaling.py`` plus ``invariant-loops`` (n/4 index-independent loops over a
captured array, each feeding the result, then the index) prints the seconds of the whole
common pipeline with and without ``hoist`` and of ``hoist`` alone on the optimised IR.

  python tools/hoist_scaling.py --sizes 30,100,300,1000
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _invariant_loops(n: int) -> str:
    lines = ["import numpy as np", "c = np.linspace(0.0, 1.0, 16)", "def f(i):", "    x = 0.0"]
    for k in range(n // 4):
        lines += [
            f"    t{k} = 0.0",
            f"    for k{k} in range(c.shape[0]):",
            f"        t{k} += np.exp(c[k{k}] * {k + 1}.0)",
            f"    x = x + t{k} * {k}.5",
        ]
    return "\n".join([*lines, "    return x + i", ""])


def _load(source: str, name: str, folder: Path):
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f


def main() -> None:
    from offload.lowering import check_and_lower
    from offload.opt.hoist import HoistInvariants
    from offload.opt.manager import run_pipeline
    from offload.options import CompileOptions
    from tests.opt.scaling import SHAPES

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="30,100,300,1000")
    args = p.parse_args()
    shapes = {**SHAPES, "invariant-loops": _invariant_loops}
    folder = Path(tempfile.mkdtemp(prefix="offload-hoist-"))
    print(
        f"{'shape':16s} {'lines':>6s} {'pipeline_s':>10s} {'no_hoist_s':>10s} "
        f"{'hoist_s':>8s} {'hoisted':>7s}"
    )
    for shape, make in shapes.items():
        for n in (int(s) for s in args.sizes.split(",")):
            fn = _load(make(n), f"hoist_{shape.replace('-', '_')}_{n}", folder)
            ir = check_and_lower(fn, 1).ir
            t0 = time.perf_counter()
            out = run_pipeline(ir, CompileOptions())
            with_hoist = time.perf_counter() - t0
            t0 = time.perf_counter()
            before = run_pipeline(ir, CompileOptions(disabled_passes=frozenset({"hoist"})))
            without = time.perf_counter() - t0
            t0 = time.perf_counter()
            HoistInvariants().run(before)
            alone = time.perf_counter() - t0
            print(
                f"{shape:16s} {n:6d} {with_hoist:10.3f} {without:10.3f} {alone:8.4f} "
                f"{out.hoisted:7d}"
            )


if __name__ == "__main__":
    main()
