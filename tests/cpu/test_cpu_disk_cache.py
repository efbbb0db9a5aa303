"""The CPU kernels' disk cache (issue 18 item 5): a fresh process reuses the machine code a
previous one compiled for compute_s and compute_p (numba finds it: no compile), the key
follows the options, ``cache info``/``clear`` show and remove it, and a kernel file that is
not the expected text, or a directory others can write, is never run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts import ROOT

pytestmark = pytest.mark.cpu

SCRIPT = """
import json, sys, warnings
import numpy as np
import offload as ol
from offload.cpu.backend import CPU_PAR, CPU_SEQ

a = np.linspace(-1.0, 1.0, 64)
ol.config.bounds_check = len(sys.argv) > 1

def f(i):
    x = a[i]
    return x * x if x > 0.0 else -x

def g(i, j):
    return a[i] * a[j] + float((i + j) % 3)

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    s = ol.compute_s(64, f)
    p = ol.compute_p((64, 64), g)
assert np.array_equal(s, np.where(a > 0, a * a, -a))
assert np.array_equal(p, a[:, None] * a[None, :] + (np.add.outer(np.arange(64), np.arange(64)) % 3))
stats = {"hits": 0, "misses": 0}
for backend in (CPU_SEQ, CPU_PAR):
    for kernel in backend._cache.values():
        st = kernel.dispatcher.stats
        stats["hits"] += sum(st.cache_hits.values())
        stats["misses"] += sum(st.cache_misses.values())
stats["warnings"] = [str(w.message) for w in caught]
print(json.dumps(stats))
"""


def _run(tmp_path: Path, cache: Path, *args: str) -> dict:
    import json

    script = tmp_path / "cpu_cache_user.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OFFLOAD_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cli(cache: Path, action: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OFFLOAD_CACHE_DIR": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "offload", "cache", action],
        capture_output=True, text=True, timeout=300, env=env, check=True,
    ).stdout  # fmt: skip


def _info(cache: Path) -> dict[str, str]:
    return dict(line.split(None, 1) for line in _cli(cache, "info").splitlines())


def test_a_fresh_process_loads_compute_s_and_compute_p_kernels_from_the_disk(tmp_path):
    cache = tmp_path / "cache"
    first = _run(tmp_path, cache)
    assert first["misses"] == 2 and first["hits"] == 0  # the two kernels launched
    # (compute_p's small work runs its own kernel on one thread: no cpu-seq kernel)
    entries = int(_info(cache)["cpu_entries"])
    assert entries == 2
    second = _run(tmp_path, cache)
    assert second == {"hits": 2, "misses": 0, "warnings": []}
    assert int(_info(cache)["cpu_entries"]) == entries
    # Other options are another kernel (bounds checking changes the code).
    checked = _run(tmp_path, cache, "bounds-check")
    assert checked["misses"] == 2 and checked["hits"] == 0
    assert int(_info(cache)["cpu_entries"]) == 2 * entries
    assert f"removed {2 * entries} cached kernel(s)" in _cli(cache, "clear")
    assert _info(cache)["cpu_entries"] == "0"
    assert _run(tmp_path, cache)["misses"] == 2


def test_a_kernel_file_that_is_not_the_expected_text_is_rewritten_not_run(tmp_path):
    cache = tmp_path / "cache"
    _run(tmp_path, cache)
    planted = tmp_path / "planted"
    files = sorted((cache / "cpu").glob("k*.py"))
    texts = [path.read_text() for path in files]
    for path, text in zip(files, texts):
        path.write_text(f"open({str(planted)!r}, 'w').close()\n" + text)
    _run(tmp_path, cache)  # (the script checks its results)
    assert not planted.exists()
    assert [path.read_text() for path in files] == texts


def test_a_directory_others_can_write_is_not_used(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    os.chmod(cache, 0o777)
    out = _run(tmp_path, cache)
    assert out["hits"] == 0  # compiled in memory
    assert any("writable by group or others" in w for w in out["warnings"]), out
    assert not (cache / "cpu").exists()


@pytest.mark.unit
def test_the_directory_is_bounded_by_evicting_the_least_recently_used(tmp_path):
    import time

    from offload.cpu.diskcache import CpuDiskCache, cpu_cache_info

    cache = CpuDiskCache(max_bytes=650, evict_every=1)  # three 208-byte kernels
    cache.use(tmp_path)
    for k in range(5):
        src = f"def kernel():\n    return {k}\n" + "#" * 180 + "\n"
        assert cache.function(f"{k:040d}", src, "kernel")() == k
        time.sleep(0.01)
    left = sorted(p.name for p in (tmp_path / "cpu").glob("k*.py"))
    assert left == [f"k{k:040d}.py" for k in (2, 3, 4)]
    assert cpu_cache_info(tmp_path)["cpu_entries"] == 3
    assert cache.misses == 5 and cache.hits == 0


@pytest.mark.unit
def test_a_look_at_the_cache_lists_each_folder_once(tmp_path, monkeypatch):
    """Sizing the cache listed numba's ``__pycache__`` once per kernel: with the few
    thousand kernels a test run leaves, 17 s per compiled kernel. One listing per folder,
    and a look only every ``evict_every`` misses."""
    import os

    from offload.cpu import diskcache

    folder = tmp_path / "cpu"
    (folder / "__pycache__").mkdir(parents=True)
    for k in range(50):
        (folder / f"k{k:040d}.py").write_text("x = 1\n")
        for ext in ("nbi", "0.nbc"):
            (folder / "__pycache__" / f"k{k:040d}.kernel-1.py311.{ext}").write_bytes(b"1" * 10)
    listed = []
    real = os.listdir

    def counting(path):
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(diskcache.os, "listdir", counting)
    kernels = diskcache._kernels(folder)
    assert len(kernels) == 50 and all(size == 6 + 20 for _, size, _ in kernels)
    assert len(listed) == 2

    looks = []
    cache = diskcache.CpuDiskCache(max_bytes=1 << 30, evict_every=4)
    monkeypatch.setattr(cache, "_evict", lambda folder, keep: looks.append(keep))
    cache.use(tmp_path)
    for k in range(9):
        cache.function(f"{k + 100:040d}", f"def kernel():\n    return {k}\n", "kernel")
    assert len(looks) == 3  # misses 1, 5 and 9
