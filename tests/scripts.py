"""Shared test helpers: run a script in a fresh Python process, import a module from a path."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_script(
    folder: Path, name: str, text: str, python: str | Path = sys.executable
) -> subprocess.CompletedProcess[str]:
    """Write ``text`` to ``folder/name`` and run it with this checkout on the path (a crash
    or a killed child cannot take the test runner down), by ``python`` (default: this one)."""
    script = folder / name
    script.write_text(text)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [str(python), "-W", "ignore", str(script)],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip


def import_path(path: Path, name: str) -> types.ModuleType:
    """Import the file ``path`` as module ``name`` (registered in ``sys.modules``)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
