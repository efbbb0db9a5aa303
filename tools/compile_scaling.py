"""Compile time against function size (issue 19): prints, for each shape of code in
``tests/opt/scaling.py`` and each size, the seconds offload's IR stages take (checks,
lowering, the common pipeline) and, with ``--numba``, a cold ``compute_s`` and a cold
``compute_p``.

  python tools/compile_scaling.py                       # IR stages, 10..1000 lines
  python tools/compile_scaling.py --numba --sizes 10,20,30 --shapes divmod-chain
  python tools/compile_scaling.py --numba --rank 2 --sizes 30,100  # f(i, j): i = i + j first

What is timed: ``ir_s`` in this process. ``compute_s``/``compute_p`` each in a fresh Python
process with an empty ``OFFLOAD_CACHE_DIR`` (``cold_seconds``): the first call of the
function, i.e. checks, lowering, passes, kernel emission, numba's compile of the kernel and
one launch over 4 elements, after numba's own start-up (a trivial kernel on each target,
not timed). ``compute_p`` times the parallel (``cpu-par``) kernel: ``ThreadChoice`` would
run the ``cpu-seq`` kernel for so small a launch (or on a loaded machine), so in the timing
process it is told to pick all threads, and the process checks that no ``cpu-seq`` kernel
was compiled for the call. Nothing is shared between the two columns.

``cold_seconds`` is also what ``tools/ports_report.py --compile`` and
``tools/stencil9_compile.py`` time with.
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))


def cold_seconds(target: str, factory: str, *args: str) -> float:
    """Seconds of the first ``ol.compute_<target>(shape, fn)`` call (``target`` ``"s"`` or
    ``"p"``) in a fresh Python process whose ``OFFLOAD_CACHE_DIR`` is empty; ``factory``
    (``"module:function"``, importable from the repository root or ``tools/``) is called
    there with ``args`` and a scratch folder and returns ``(shape, fn)`` (not timed). See
    the module doc."""
    with tempfile.TemporaryDirectory(prefix="offload-cold-") as scratch:
        env = {
            **os.environ,
            "OFFLOAD_CACHE_DIR": str(Path(scratch) / "cache"),
            "PYTHONPATH": os.pathsep.join(
                [str(ROOT), str(TOOLS), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
        }
        code = f"import compile_scaling; compile_scaling.cold_child({target!r}, {factory!r})"
        done = subprocess.run(
            [sys.executable, "-c", code, *args, scratch],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"cold compute_{target} of {factory}{args} failed:\n{done.stderr}")
    return float(done.stdout.split()[-1])


def cold_child(target: str, factory: str) -> None:
    """The timing process of ``cold_seconds``: ``sys.argv[1:]`` are the factory's
    arguments, then a scratch folder; prints the seconds."""
    import offload as ol
    from offload.cpu import threads
    from offload.cpu.backend import CPU_SEQ

    # compute_p's parallel kernel at any size and load (offload.cpu.threads).
    threads.ThreadChoice.pick = lambda self, elements: self.max_threads
    ol.compute_s(1, _start_up)  # numba's own start-up, and its thread pool's
    ol.compute_p(1, _start_up)
    module, name = factory.split(":")
    shape, fn = getattr(importlib.import_module(module), name)(*sys.argv[1:])
    compute = {"s": ol.compute_s, "p": ol.compute_p}[target]
    sequential = len(CPU_SEQ._cache)
    t0 = time.perf_counter()
    compute(shape, fn)
    seconds = time.perf_counter() - t0
    if target == "p" and len(CPU_SEQ._cache) != sequential:
        raise AssertionError("compute_p ran the cpu-seq kernel (NUMBA_NUM_THREADS=1?)")
    print(seconds)


def _start_up(i: int) -> int:
    return i


def scaling_case(shape: str, n: str, folder: str) -> tuple[int, Any]:
    """``cold_seconds``'s factory here: the function of ``shape`` and ``n`` lines (its
    source file in ``folder``), over 4 elements."""
    from tests.opt.scaling import load

    return 4, load(shape, int(n), Path(folder))


def scaling_case_2d(shape: str, n: str, folder: str) -> tuple[tuple[int, int], Any]:
    """``scaling_case`` of rank 2 (``compute_p``'s rank >= 2 kernel holds the body twice,
    ``offload.cpu.loopnest``): ``f(i, j)`` begins ``i = i + j``, over 2 x 2 elements."""
    import importlib.util

    from tests.opt.scaling import SHAPES

    text = SHAPES[shape](int(n)).replace("def f(i):\n", "def f(i, j):\n    i = i + j\n", 1)
    path = Path(folder) / f"scaling2_{shape.replace('-', '_')}_{n}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return (2, 2), module.f


def main() -> int:
    from tests.opt.scaling import SHAPES, ir_seconds, load

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sizes", default="10,30,100,300,1000")
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--numba", action="store_true", help="also time cold compute_s, compute_p")
    p.add_argument("--limit", type=float, default=120, help="skip larger sizes after this")
    p.add_argument("--rank", type=int, choices=(1, 2), default=1, help="the cold calls' rank")
    args = p.parse_args()
    case = "compile_scaling:scaling_case" + ("_2d" if args.rank == 2 else "")
    from offload.diagnostics import OffloadError

    folder = Path(tempfile.mkdtemp(prefix="offload-scaling-"))
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
                cs = cold_seconds("s", case, shape, str(n))
                cp = cold_seconds("p", case, shape, str(n))
                row += f" {cs:10.3f} {cp:10.3f}"
                slow = slow or max(cs, cp) > args.limit
            print(row, flush=True)
            if slow:
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
