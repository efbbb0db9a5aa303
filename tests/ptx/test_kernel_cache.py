"""The kernel cache: keys, disk entries, corruption, concurrency, eviction, fallback."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import warnings

import pytest

from offload.ptx.cache import CacheEntry, KernelCache, OffloadCacheWarning, cache_key

pytestmark = pytest.mark.unit
VERSIONS = (("numba-cuda", "0.30.4"), ("nvvm", "2.0"))


def _key(ir="func @f", opts="o", cc=(9, 0), versions=VERSIONS):
    return cache_key(ir, ["array<f32,1>"], opts, cc, versions)


def _entry(ptx="//ptx\n.entry k()"):
    return CacheEntry(ptx, "k", {"num_regs": 10})


class Counter:
    def __init__(self, ptx="//ptx\n.entry k()"):
        self.calls = 0
        self.ptx = ptx

    def __call__(self):
        self.calls += 1
        return _entry(self.ptx)


def test_key_changes_with_each_input_and_is_stable_across_processes():
    base = _key()
    assert (
        len(
            {
                base,
                _key(ir="func @g"),
                _key(opts="p"),
                _key(cc=(8, 0)),
                _key(versions=(("numba-cuda", "0.31"),)),
            }
        )
        == 5
    )
    code = (
        "from offload.ptx.cache import cache_key;"
        "print(cache_key('func @f', ['array<f32,1>'], 'o', (9, 0),"
        " (('numba-cuda', '0.30.4'), ('nvvm', '2.0'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == base


def test_second_cache_on_the_same_directory_hits_disk_without_compiling(tmp_path):
    KernelCache(tmp_path).get_or_compile("k1", Counter())
    again = Counter()
    cache = KernelCache(tmp_path)
    entry = cache.get_or_compile("k1", again)
    assert again.calls == 0 and cache.stats.disk_hits == 1
    assert entry.meta == {"num_regs": 10} and entry.kernel_name == "k"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k1.json", "k1.ptx"]


def test_corrupt_ptx_is_recompiled_and_rewritten(tmp_path):
    KernelCache(tmp_path).get_or_compile("k1", Counter())
    (tmp_path / "k1.ptx").write_text("garbage")
    recompile = Counter()
    cache = KernelCache(tmp_path)
    entry = cache.get_or_compile("k1", recompile)
    assert recompile.calls == 1 and cache.stats.corrupt == 1
    assert entry.ptx == (tmp_path / "k1.ptx").read_text() == recompile.ptx
    assert KernelCache(tmp_path).get_or_compile("k1", Counter()).ptx == recompile.ptx


def test_truncated_metadata_is_treated_as_corrupt(tmp_path):
    KernelCache(tmp_path).get_or_compile("k1", Counter())
    (tmp_path / "k1.json").write_text('{"ptx_sha')
    recompile = Counter()
    KernelCache(tmp_path).get_or_compile("k1", recompile)
    assert recompile.calls == 1


def test_concurrent_writers_of_one_key_leave_a_valid_entry(tmp_path):
    errors = []

    def write(n):
        try:
            for _ in range(20):
                c = KernelCache(tmp_path)
                c.get_or_compile("k1", Counter())
        except Exception as exc:  # pragma: no cover - the failure being tested for
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    check = Counter()
    KernelCache(tmp_path).get_or_compile("k1", check)
    assert check.calls == 0
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]


def test_concurrent_processes_share_one_entry(tmp_path):
    code = (
        "import sys; from offload.ptx.cache import KernelCache, CacheEntry\n"
        "for _ in range(10):\n"
        "    KernelCache(sys.argv[1]).get_or_compile('k1', lambda: CacheEntry('//p', 'k'))\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)]) for _ in range(3)]
    assert [p.wait() for p in procs] == [0, 0, 0]
    assert KernelCache(tmp_path).get_or_compile("k1", Counter()).ptx == "//p"


def test_directory_is_bounded_by_evicting_least_recently_used(tmp_path):
    cache = KernelCache(tmp_path, max_bytes=10_000)
    big = "x" * 3000
    for k in range(3):
        cache.get_or_compile(f"k{k}", Counter(big))
        os.utime(tmp_path / f"k{k}.json", (1000 + k, 1000 + k))
    cache.get_or_compile("k3", Counter(big))
    names = {p.stem for p in tmp_path.glob("*.json")}
    assert "k0" not in names and "k3" in names
    assert cache.info()["bytes"] <= 10_000


def test_unwritable_directory_warns_once_and_falls_back_to_memory(tmp_path, monkeypatch):
    # Fault injection: root ignores directory permissions, so refuse the write instead.
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(kwargs.get("dir", "")))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    _check_fallback(KernelCache(tmp_path / "cache"))


def test_directory_that_cannot_be_created_warns_once_and_falls_back_to_memory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    _check_fallback(KernelCache(blocker / "cache"))


def _check_fallback(cache):
    with pytest.warns(OffloadCacheWarning, match="not writable"):
        cache.get_or_compile("k1", Counter())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        counter = Counter()
        cache.get_or_compile("k2", counter)  # no second warning
        cache.get_or_compile("k2", counter)
    assert counter.calls == 1 and cache.stats.memory_hits == 1


def test_clear_removes_disk_and_memory_entries(tmp_path):
    cache = KernelCache(tmp_path)
    cache.get_or_compile("k1", Counter())
    assert cache.clear() == 1
    assert list(tmp_path.iterdir()) == []
    counter = Counter()
    cache.get_or_compile("k1", counter)
    assert counter.calls == 1


def test_backend_key_changes_with_the_kernel_source_for_the_same_ir(tmp_path):
    # A change to the thread mapping or the emitter shows in the kernel source, not in the
    # IR: a disk entry made by an older skeleton must not be loaded for it.
    import dataclasses

    from offload.options import CompileOptions
    from offload.ptx.backend import GPUBackend
    from offload.ptx.kernel_source import build_kernel_source
    from tests.ptx.irfixtures import ALL

    fn = ALL["index_arith"]()
    ks = build_kernel_source(fn)
    be = GPUBackend(cache_dir=tmp_path)
    opts = CompileOptions()
    key = be.key(fn, opts, (9, 0), ks)
    assert key == be.key(fn, opts, (9, 0), build_kernel_source(fn))
    changed = dataclasses.replace(ks, source=ks.source.replace("plane", "slab"))
    assert be.key(fn, opts, (9, 0), changed) != key
