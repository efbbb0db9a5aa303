"""The kernel cache's cubins: stored beside the PTX under the JSON's checksum, held to the
PTX's trust rules (a bad cubin is never returned: the PTX is, and the cubin is linked
again), counted by ``cache info``, removed by ``cache clear`` and by eviction."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from offload.ptx.cache import CacheEntry, KernelCache, cache_clear, cache_info

pytestmark = pytest.mark.unit
PTX = "//ptx\n.entry k()"
CUBIN = b"\x7fELF" + bytes(range(60)) * 4
RELINKED = b"\x7fELF relinked"


class Compile:
    def __init__(self, cubin: bytes | None = CUBIN) -> None:
        self.calls = 0
        self.cubin = cubin

    def __call__(self) -> CacheEntry:
        self.calls += 1
        return CacheEntry(PTX, "k", {"num_regs": 10}, self.cubin)


class Relink:
    def __init__(self, cubin: bytes | None = RELINKED) -> None:
        self.ptx: list[str] = []
        self.cubin = cubin

    def __call__(self, ptx: str) -> bytes | None:
        self.ptx.append(ptx)
        return self.cubin


def _meta(directory: Path, key: str = "k1") -> dict[str, object]:
    return json.loads((directory / f"{key}.json").read_text())


def test_cubin_is_stored_beside_the_ptx_and_vouched_for_by_the_json(tmp_path):
    KernelCache(tmp_path).get_or_compile("k1", Compile())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k1.cubin", "k1.json", "k1.ptx"]
    assert (tmp_path / "k1.cubin").read_bytes() == CUBIN
    assert _meta(tmp_path)["cubin_sha256"] == hashlib.sha256(CUBIN).hexdigest()


def test_fresh_cache_returns_the_cubin_from_disk_without_compiling_or_linking(tmp_path):
    KernelCache(tmp_path).get_or_compile("k1", Compile())
    again, relink = Compile(), Relink()
    cache = KernelCache(tmp_path)
    entry = cache.get_or_compile("k1", again, relink)
    assert entry.cubin == CUBIN and entry.ptx == PTX
    assert again.calls == 0 and relink.ptx == [] and cache.stats.disk_hits == 1
    assert cache.stats.bad_cubins == 0 and cache.stats.corrupt == 0


def _damage(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-1] + b"\0")


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:10])


DAMAGE = {
    "damaged": _damage,
    "truncated": _truncate,
    "missing": Path.unlink,
    "empty": lambda p: p.write_bytes(b""),
    "writable_by_others": lambda p: p.chmod(0o666),
}


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_bad_cubin_is_never_returned_and_is_relinked_from_the_ptx(tmp_path, how):
    KernelCache(tmp_path).get_or_compile("k1", Compile())
    DAMAGE[how](tmp_path / "k1.cubin")
    recompile, relink = Compile(), Relink()
    cache = KernelCache(tmp_path)
    entry = cache.get_or_compile("k1", recompile, relink)
    # The PTX was good: no recompile, the cubin linked again from it.
    assert recompile.calls == 0 and relink.ptx == [PTX]
    assert entry.cubin == RELINKED and entry.ptx == PTX
    assert cache.stats.bad_cubins == 1 and cache.stats.corrupt == 0
    # Repaired on disk: the next process loads the new cubin as it is.
    assert (tmp_path / "k1.cubin").read_bytes() == RELINKED
    assert (tmp_path / "k1.cubin").stat().st_mode & 0o077 == 0
    fresh, relink_again = KernelCache(tmp_path), Relink()
    assert fresh.get_or_compile("k1", Compile(), relink_again).cubin == RELINKED
    assert relink_again.ptx == [] and fresh.stats.bad_cubins == 0


def test_bad_cubin_without_a_linker_leaves_an_entry_that_loads_from_ptx(tmp_path):
    KernelCache(tmp_path).get_or_compile("k1", Compile())
    _damage(tmp_path / "k1.cubin")
    cache = KernelCache(tmp_path)
    entry = cache.get_or_compile("k1", Compile(), relink=None)
    assert entry.cubin is None and entry.ptx == PTX and cache.stats.bad_cubins == 1
    assert "cubin_sha256" not in _meta(tmp_path)  # the damaged file is vouched for no more
    fresh = KernelCache(tmp_path)
    assert fresh.get_or_compile("k1", Compile(), Relink()).cubin is None
    assert fresh.stats.bad_cubins == 0 and fresh.stats.disk_hits == 1


def test_entry_that_never_had_a_cubin_loads_from_ptx_and_is_not_relinked(tmp_path):
    # An older cache, or a process without nvJitLink: a cubin comes with the next compile.
    KernelCache(tmp_path).get_or_compile("k1", Compile(cubin=None))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k1.json", "k1.ptx"]
    recompile, relink = Compile(), Relink()
    cache = KernelCache(tmp_path)
    entry = cache.get_or_compile("k1", recompile, relink)
    assert entry.cubin is None and recompile.calls == 0 and relink.ptx == []
    assert cache.stats.bad_cubins == 0


def test_planted_cubin_the_json_does_not_vouch_for_is_never_loaded(tmp_path):
    KernelCache(tmp_path).get_or_compile("k1", Compile(cubin=None))
    (tmp_path / "k1.cubin").write_bytes(CUBIN)
    entry = KernelCache(tmp_path).get_or_compile("k1", Compile(), Relink())
    assert entry.cubin is None


def test_info_counts_cubins_and_their_bytes_and_clear_removes_them(tmp_path):
    cache = KernelCache(tmp_path)
    cache.get_or_compile("k1", Compile())
    cache.get_or_compile("k2", Compile(cubin=None))
    info = cache_info(tmp_path)
    assert info["entries"] == 2 and info["cubins"] == 1
    assert info["bytes"] == sum(p.stat().st_size for p in tmp_path.iterdir())
    assert info["bytes"] > 2 * len(CUBIN)
    assert cache_clear(tmp_path) == 2
    assert list(tmp_path.iterdir()) == []


def test_dead_writers_lone_cubin_is_an_orphan_and_a_young_one_is_kept(tmp_path):
    old, young = tmp_path / "k1.cubin", tmp_path / "k2.cubin"
    old.write_bytes(CUBIN)
    young.write_bytes(CUBIN)
    t = old.stat().st_mtime - 3600
    os.utime(old, (t, t))
    info = cache_info(tmp_path)
    assert info["orphans"] == 1 and info["entries"] == 0 and info["bytes"] == len(CUBIN)
    assert cache_clear(tmp_path) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["k2.cubin"]


def test_eviction_counts_the_cubins_bytes_and_removes_them(tmp_path):
    big = CUBIN * 20  # ~5 KB of cubin per entry beside a few bytes of PTX
    cache = KernelCache(tmp_path, max_bytes=12_000)
    for k in range(2):
        cache.get_or_compile(f"k{k}", Compile(big))
        os.utime(tmp_path / f"k{k}.json", (1000 + k, 1000 + k))
    assert cache.stats.evicted == 0
    cache.get_or_compile("k2", Compile(big))  # three cubins pass the limit: k0 goes
    assert cache.stats.evicted == 1
    assert sorted(p.name for p in tmp_path.glob("*.cubin")) == ["k1.cubin", "k2.cubin"]
    assert not (tmp_path / "k0.ptx").exists() and cache.info()["bytes"] <= 12_000
