"""``python -m offload``: cache info/clear and explain, as a user runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cpu

KERNELS = """
import numpy as np
a = np.arange(10.0)

def double(i):
    return a[i] * 2 if i % 2 == 0 else -a[i]
"""


def _run(args: list[str], cwd: Path, env_extra: dict[str, str]) -> str:
    import os

    env = {**os.environ, **env_extra}
    done = subprocess.run(
        [sys.executable, "-m", "offload", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return done.stdout


def test_cache_info_and_clear_report_the_directory(tmp_path):
    env = {"OFFLOAD_CACHE_DIR": str(tmp_path / "cache")}
    info = _run(["cache", "info"], tmp_path, env)
    assert "entries" in info and str(tmp_path / "cache") in info
    assert "removed 0 cached kernel(s)" in _run(["cache", "clear"], tmp_path, env)


def test_explain_prints_ir_after_each_pass_and_the_kernel(tmp_path):
    (tmp_path / "userkernels.py").write_text(KERNELS)
    out = _run(["explain", "userkernels:double", "10"], tmp_path, {})
    assert "== IR after lowering" in out
    assert "== IR after select" in out and "== IR after divmod" in out
    assert "== CPU kernel source" in out and "userkernels.py" in out
