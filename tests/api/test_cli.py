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


@pytest.mark.parametrize("action", ["info", "clear"])
def test_cache_command_on_an_unreadable_directory_fails_in_one_line(tmp_path, action):
    import os

    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    env = {**os.environ, "OFFLOAD_CACHE_DIR": str(not_a_dir)}
    done = subprocess.run(
        [sys.executable, "-m", "offload", "cache", action],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"offload cache {action}: cannot read {not_a_dir}: Not a directory"
    ]


def test_cache_clear_removes_a_dead_writers_leftovers(tmp_path):
    import os

    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    leftovers = [cache / ".k1.ptx.abc.tmp", cache / "k2.ptx"]
    for path in leftovers:
        path.write_text("x")
        os.utime(path, (1000, 1000))
    env = {"OFFLOAD_CACHE_DIR": str(cache)}
    assert "orphans      2" in _run(["cache", "info"], tmp_path, env)
    assert "removed 2 cached kernel(s) and leftover(s)" in _run(["cache", "clear"], tmp_path, env)
    assert list(cache.iterdir()) == []


def test_explain_prints_ir_after_each_pass_and_the_kernel(tmp_path):
    (tmp_path / "userkernels.py").write_text(KERNELS)
    out = _run(["explain", "userkernels:double", "10"], tmp_path, {})
    assert "== IR after lowering" in out
    assert "== IR after select" in out and "== IR after divmod" in out
    assert "== CPU kernel source" in out and "userkernels.py" in out
