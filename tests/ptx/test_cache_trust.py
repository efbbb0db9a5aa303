"""The kernel cache trusts no one: malformed metadata, a directory or file others could
write, dead writers' leftovers and unreadable directories (issue 19)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import warnings
from pathlib import Path

import pytest

from offload.config import Config
from offload.ptx.cache import (
    CacheEntry,
    KernelCache,
    OffloadCacheWarning,
    cache_clear,
    cache_info,
    untrusted_reason,
)

pytestmark = pytest.mark.unit
PTX = "//ptx\n.entry k()"
SHA = hashlib.sha256(PTX.encode()).hexdigest()


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> CacheEntry:
        self.calls += 1
        return CacheEntry(PTX, "k", {"num_regs": 10})


def _plant(directory: Path, key: str, meta: str | bytes, mode: int = 0o600) -> None:
    meta_bytes = meta.encode() if isinstance(meta, str) else meta
    for name, data in ((f"{key}.ptx", PTX.encode()), (f"{key}.json", meta_bytes)):
        path = directory / name
        path.write_bytes(data)
        path.chmod(mode)


GOOD = {"ptx_sha256": SHA, "kernel_name": "k", "meta": {"num_regs": 10}}
NESTED = "[" * 100_000 + "1" + "]" * 100_000
DEEP = f'{{"ptx_sha256": "{SHA}", "kernel_name": "k", "meta": {{"a": {NESTED}}}}}'
MALFORMED: dict[str, str | bytes] = {
    "kernel_name_missing": json.dumps({k: v for k, v in GOOD.items() if k != "kernel_name"}),
    "meta_missing": json.dumps({k: v for k, v in GOOD.items() if k != "meta"}),
    "checksum_missing": json.dumps({k: v for k, v in GOOD.items() if k != "ptx_sha256"}),
    "kernel_name_not_a_string": json.dumps({**GOOD, "kernel_name": 7}),
    "meta_a_list": json.dumps({**GOOD, "meta": [["num_regs", 10]]}),
    "meta_a_string": json.dumps({**GOOD, "meta": "abc"}),
    "meta_value_nested": json.dumps({**GOOD, "meta": {"a": {"b": [1, 2]}}}),
    "checksum_not_a_string": json.dumps({**GOOD, "ptx_sha256": [SHA]}),
    "cubin_checksum_not_a_string": json.dumps({**GOOD, "cubin_sha256": 7}),
    "top_level_a_list": json.dumps([GOOD]),
    "top_level_null": "null",
    "deep_nesting": DEEP,
    "not_utf8": b'{"ptx_sha256": "\xff\xfe"}',
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_metadata_with_a_matching_checksum_is_recompiled(tmp_path, name):
    _plant(tmp_path, "k1", MALFORMED[name])
    recompile = Counter()
    cache = KernelCache(tmp_path)
    entry = cache.get_or_compile("k1", recompile)
    assert recompile.calls == 1 and cache.stats.corrupt == 1
    assert entry.meta == {"num_regs": 10}
    # Rewritten: the next process hits the disk.
    again = Counter()
    KernelCache(tmp_path).get_or_compile("k1", again)
    assert again.calls == 0


def test_well_formed_planted_entry_in_a_private_directory_is_loaded(tmp_path):
    # The counterpart of the tests above: the shape check accepts what _store writes.
    _plant(tmp_path, "k1", json.dumps(GOOD))
    counter = Counter()
    assert KernelCache(tmp_path).get_or_compile("k1", counter).ptx == PTX
    assert counter.calls == 0


def test_new_cache_directory_is_created_private(tmp_path):
    directory = tmp_path / "a" / "cache"
    KernelCache(directory).get_or_compile("k1", Counter())
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((directory / "k1.json").stat().st_mode) == 0o600


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777], ids=oct)
def test_directory_writable_by_others_is_refused_and_its_planted_entry_never_loaded(tmp_path, mode):
    directory = tmp_path / "shared"
    directory.mkdir()
    _plant(directory, "k1", json.dumps(GOOD))
    directory.chmod(mode)
    cache = KernelCache(directory)
    counter = Counter()
    with pytest.warns(OffloadCacheWarning, match="not trusted.*writable by group or others"):
        entry = cache.get_or_compile("k1", counter)
    assert counter.calls == 1 and cache.stats.disk_hits == 0
    assert entry.ptx == PTX
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once; memory only from now on
        cache.get_or_compile("k2", counter)
    assert sorted(p.name for p in directory.iterdir()) == ["k1.json", "k1.ptx"]


@pytest.mark.skipif(not hasattr(os, "chown") or os.geteuid() != 0, reason="needs root")
def test_directory_owned_by_another_user_is_refused(tmp_path):
    directory = tmp_path / "theirs"
    directory.mkdir(mode=0o700)
    _plant(directory, "k1", json.dumps(GOOD))
    os.chown(directory, 65534, 65534)
    counter = Counter()
    with pytest.warns(OffloadCacheWarning, match="owned by uid 65534"):
        KernelCache(directory).get_or_compile("k1", counter)
    assert counter.calls == 1


def test_untrusted_reason_names_the_owner_and_the_mode(tmp_path):
    tmp_path.chmod(0o700)
    st = tmp_path.stat()
    assert untrusted_reason(st, uid=st.st_uid) is None
    assert "owned by uid" in (untrusted_reason(st, uid=st.st_uid + 1) or "")
    tmp_path.chmod(0o720)
    assert "mode 0720" in (untrusted_reason(tmp_path.stat(), uid=st.st_uid) or "")


@pytest.mark.parametrize("which", ["json", "ptx"])
def test_entry_file_writable_by_others_is_a_bad_entry(tmp_path, which):
    _plant(tmp_path, "k1", json.dumps(GOOD))
    (tmp_path / f"k1.{which}").chmod(0o666)
    counter = Counter()
    cache = KernelCache(tmp_path)
    cache.get_or_compile("k1", counter)
    assert counter.calls == 1 and cache.stats.corrupt == 1
    assert stat.S_IMODE((tmp_path / f"k1.{which}").stat().st_mode) == 0o600  # replaced


def test_default_directory_follows_xdg_cache_home(tmp_path):
    home = Path.home()
    assert Config.from_env({"XDG_CACHE_HOME": str(tmp_path)}).cache_dir == tmp_path / "offload"
    assert Config.from_env({}).cache_dir == home / ".cache" / "offload"
    # The XDG rule: a relative XDG_CACHE_HOME is ignored.
    assert Config.from_env({"XDG_CACHE_HOME": "rel"}).cache_dir == home / ".cache" / "offload"
    env = {"XDG_CACHE_HOME": str(tmp_path), "OFFLOAD_CACHE_DIR": str(tmp_path / "mine")}
    assert Config.from_env(env).cache_dir == tmp_path / "mine"


def _age(path: Path, seconds: float = 3600) -> None:
    t = path.stat().st_mtime - seconds
    os.utime(path, (t, t))


def test_dead_writers_leftovers_are_counted_and_cleared(tmp_path):
    KernelCache(tmp_path).get_or_compile("k1", Counter())
    dead_tmp = tmp_path / ".k2.ptx.x1y2.tmp"
    dead_tmp.write_text("half a kern")
    lone_ptx = tmp_path / "k3.ptx"
    lone_ptx.write_text(PTX)
    live_tmp = tmp_path / ".k4.json.z9.tmp"  # a writer at work now: left alone
    live_tmp.write_text("{")
    _age(dead_tmp)
    _age(lone_ptx)
    info = cache_info(tmp_path)
    assert info["entries"] == 1 and info["orphans"] == 2
    assert info["bytes"] >= len("half a kern") + len(PTX)
    assert cache_clear(tmp_path) == 3
    assert [p.name for p in tmp_path.iterdir()] == [live_tmp.name]


def test_young_lone_ptx_is_a_live_writers_and_kept(tmp_path):
    (tmp_path / "k1.ptx").write_text(PTX)
    assert cache_info(tmp_path)["orphans"] == 0
    assert cache_clear(tmp_path) == 0
    assert (tmp_path / "k1.ptx").exists()


def test_missing_directory_is_empty_but_an_unlistable_one_is_an_error(tmp_path, monkeypatch):
    assert cache_info(tmp_path / "none")["entries"] == 0
    assert cache_clear(tmp_path / "none") == 0
    afile = tmp_path / "file"
    afile.write_text("")
    with pytest.raises(NotADirectoryError):
        cache_info(afile)
    with pytest.raises(NotADirectoryError):
        cache_clear(afile)

    def denied(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(os, "scandir", denied)  # root reads any directory: inject it
    with pytest.raises(PermissionError):
        cache_info(tmp_path)
    with pytest.raises(PermissionError):
        cache_clear(tmp_path)
