"""The paper-style plots of a run made of several calls: merge their result files by
benchmark (each benchmark's configurations from every file, per-iteration times), derive
speedups over compute_s and roofline fractions again, and draw ``benchmarks.report``'s two
charts.

    python tools/plot_run.py OUT_DIR STEM results-a.json [results-b.json ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks import report


def merged(paths: list[Path]) -> dict[str, Any]:
    """One results record with every benchmark's configurations from every file."""
    by_name: dict[str, dict[str, Any]] = {}
    for path in paths:
        for bench in json.loads(path.read_text())["benchmarks"]:
            into = by_name.setdefault(bench["name"], {**bench, "configs": []})
            into["configs"] += bench["configs"]
    for rec in by_name.values():
        report.derive(rec)
    return {"benchmarks": list(by_name.values())}


def main(argv: list[str]) -> int:
    out, stem, *files = argv
    for note in report.plots(merged([Path(f) for f in files]), Path(out), stem):
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
