"""A long differential fuzzing campaign (issue 19): ``python tools/fuzz.py --budget 600``.

Generates element functions as source files (``tests/fuzz/gen.py``), runs each on CPython,
the IR interpreter, ``compute_s``, ``compute_p`` and, with ``NUMBA_ENABLE_CUDASIM=1``,
``compute_g`` under the simulator (``tests/fuzz/run.py``), and writes the source file of
every finding (a wrong value or dtype, an internal error, a crash of the process, a
program that runs past ``--timeout``) to ``--out``, with ``findings.jsonl`` describing each.
Programs run in a worker process, so a segfault is a finding rather than the end of the
campaign. Prints the counts per target at the end.

  python tools/fuzz.py --budget 600 --seed 1 --out /tmp/fuzz-findings
  python tools/fuzz.py --budget 600 --library   (NumPy library calls too: np.round(x, d),
                                                 np.isclose, np.finfo, np.var/std, ...)
  python tools/fuzz.py --budget 300 --targets interp,compute_g   (on a GPU machine: the GPU;
                                                                   tools/gpu-run.sh fuzz)
  python tools/fuzz.py --worker --seed 1   (internal: the worker)
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def worker(seed: int, folder: Path, targets: tuple[str, ...], library: bool) -> None:
    """Run seeds ``seed, seed + 1, ...`` forever, one JSON line per program."""
    sys.path.insert(0, str(ROOT))
    from tests.fuzz.gen import generate
    from tests.fuzz.run import run_program

    s = seed
    while True:
        print(json.dumps({"start": s}), flush=True)
        program = generate(s, library=library)
        out = run_program(program, folder, targets)
        row = {
            "seed": s,
            "skipped": out.skipped,
            "verdicts": out.verdicts,
            "details": out.details,
            "features": sorted(program.features),
        }
        print(json.dumps(row), flush=True)
        s += 1


def campaign(args: argparse.Namespace) -> int:
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    src_dir = Path(tempfile.mkdtemp(prefix="offload-fuzz-"))
    sys.path.insert(0, str(ROOT))
    from tests.fuzz.gen import generate

    deadline = time.monotonic() + args.budget
    counts: dict[str, Counter[str]] = {}
    skipped: Counter[str] = Counter()
    findings = 0
    next_seed = args.seed
    log = (out_dir / "findings.jsonl").open("a")

    def record(seed: int, kind: str, detail: dict[str, str]) -> None:
        nonlocal findings
        findings += 1
        shutil.copy(src_dir / f"fuzz_{seed}.py", out_dir / f"fuzz_{seed}.py") if (
            src_dir / f"fuzz_{seed}.py"
        ).exists() else (out_dir / f"fuzz_{seed}.py").write_text(
            generate(seed, library=args.library).source
        )
        log.write(json.dumps({"seed": seed, "kind": kind, "detail": detail}) + "\n")
        log.flush()
        print(f"finding: seed {seed} {kind}: {json.dumps(detail)[:300]}", flush=True)

    while time.monotonic() < deadline:
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            "--seed",
            str(next_seed),
            "--src",
            str(src_dir),
            "--targets",
            args.targets,
            *(["--library"] if args.library else []),
        ]
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert proc.stdout is not None
        current: int | None = None
        last = time.monotonic()
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if not ready:
                if current is not None and time.monotonic() - last > args.timeout:
                    proc.kill()
                    record(current, "timeout", {"all": f"no answer in {args.timeout} s"})
                    next_seed = current + 1
                    break
                continue
            line = proc.stdout.readline()
            if not line:  # the worker died (a segfault, an abort)
                proc.wait()
                if current is not None:
                    record(current, "crash", {"all": f"worker exited {proc.returncode}"})
                    next_seed = current + 1
                break
            last = time.monotonic()
            row = json.loads(line)
            if "start" in row:
                current = row["start"]
                continue
            current = None
            next_seed = row["seed"] + 1
            if row["skipped"]:
                skipped[row["skipped"].split(":")[0]] += 1
                continue
            for target, verdict in row["verdicts"].items():
                counts.setdefault(target, Counter())[verdict] += 1
            bad = {
                t: row["details"].get(t, v)
                for t, v in row["verdicts"].items()
                if v in ("mismatch", "internal")
            }
            if bad:
                record(row["seed"], "finding", bad)
        else:
            proc.kill()
        if proc.poll() is None:
            proc.kill()
    log.close()
    print(f"\nseeds {args.seed}..{next_seed - 1}, findings {findings} (sources in {out_dir})")
    print(
        f"skipped (CPython rejected or outside the model): {sum(skipped.values())} "
        f"{dict(skipped.most_common(6))}"
    )
    for target, c in counts.items():
        print(f"{target:10s} ran {sum(c.values()):5d}  {dict(c)}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--budget", type=float, default=600, help="seconds to run (default 600)")
    p.add_argument("--seed", type=int, default=0, help="the first seed")
    p.add_argument("--out", default="fuzz-findings", help="folder for findings")
    p.add_argument("--timeout", type=float, default=180, help="seconds per program")
    p.add_argument("--targets", default="", help="comma-separated (default: all available)")
    p.add_argument(
        "--library", action="store_true", help="programs with NumPy library calls as well"
    )
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--src", default="", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        sys.path.insert(0, str(ROOT))
        from tests.fuzz.run import default_targets

        targets = tuple(t for t in args.targets.split(",") if t) or default_targets()
        worker(args.seed, Path(args.src), targets, args.library)
        return 0
    return campaign(args)


if __name__ == "__main__":
    sys.exit(main())
