"""Helpers for golden tests: run one pass over IR text and check the printed result."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from offload.ir.parser import parse_function
from offload.ir.printer import print_function
from offload.ir.verifier import verify
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions


def run_text(pipeline: str, text: str, **options: object) -> str:
    """Parse ``text``, run ``pipeline`` (verifying after every pass), print the result."""
    fn = parse_function(textwrap.dedent(text))
    verify(fn)
    out = run_pipeline(fn, CompileOptions(pipeline=pipeline, verify=True, **options))  # type: ignore[arg-type]
    return print_function(out)


def filecheck(output: str, patterns: str) -> None:
    """Assert that ``output`` matches the FileCheck ``patterns`` (``CHECK:`` lines)."""
    with tempfile.TemporaryDirectory() as tmp:
        check = Path(tmp) / "check.txt"
        check.write_text(textwrap.dedent(patterns))
        proc = subprocess.run(
            [sys.executable, "-m", "filecheck", str(check)],
            input=output,
            capture_output=True,
            text=True,
            check=False,
        )
    assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}\n--- output was:\n{output}"
