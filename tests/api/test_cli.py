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


def test_cache_info_counts_cubins_and_clear_removes_them(tmp_path):
    from offload.ptx.cache import CacheEntry, KernelCache

    cache = tmp_path / "cache"
    kernels = KernelCache(cache)
    kernels.get_or_compile("k1", lambda: CacheEntry("//ptx", "k", {}, b"\x7fELF cubin"))
    kernels.get_or_compile("k2", lambda: CacheEntry("//ptx", "k", {}))
    env = {"OFFLOAD_CACHE_DIR": str(cache)}
    info = _run(["cache", "info"], tmp_path, env)
    assert "entries      2" in info and "cubins       1" in info
    assert "removed 2 cached kernel(s)" in _run(["cache", "clear"], tmp_path, env)
    assert list(cache.iterdir()) == []


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


def _run_status(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "offload", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_no_arguments_print_the_help_and_version_prints_the_package_version(tmp_path):
    import offload

    done = _run_status([], tmp_path)
    assert done.returncode == 0 and "usage: python -m offload" in done.stdout
    assert "explain" in done.stdout and "cache" in done.stdout
    done = _run_status(["--version"], tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == f"offload {offload.__version__}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["explain", "no_such_module_x:f", "4"], "no module named 'no_such_module_x'"),
        (["explain", "os:no_such_fn", "4"], "module 'os' has no attribute 'no_such_fn'"),
        (["explain", "os", "4"], "expected module:function"),
        (["explain", "os:getcwd", "4,x"], "comma-separated integers"),
    ],
)
def test_explain_mistakes_are_one_line_errors(tmp_path, args, message):
    done = _run_status(args, tmp_path)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
