"""The kernel cache: an in-process dict and a directory of ``<key>.ptx`` + ``<key>.json``,
with a ``<key>.cubin`` beside them where nvJitLink linked one (``offload.ptx.cubin``).

* The key is a sha256 over the printed optimised IR, the argument types, the compile
  options, the compute capability and the tool versions, nvJitLink's included
  (``cache_key``) -- never mtimes, salted ``hash()`` or object ids, so that it is the
  same in every process.
* Entries are written to a temporary file and ``os.replace``d: readers never see half a
  file, and several processes writing one key all write the same bytes. The JSON is written
  last and carries the PTX's sha256 (and the cubin's); an entry whose PTX does not match is
  recompiled and rewritten, never trusted. No pickle.
* The cubin is the PTX's machine code, loaded in its place so that a fresh process skips
  the driver's JIT. It is optional: an entry without one loads from PTX. A cubin that
  fails its checksum or the trust rule below is never returned (``bad_cubins``): the entry
  is loaded without it and repaired by linking its (verified) PTX again (``relink``).
  An entry that never had a cubin (no nvJitLink where it was compiled) is not relinked.
* The directory is bounded: past ``max_bytes``, least recently used entries (by mtime,
  touched on every hit) are deleted.
* An unwritable directory warns once (``OffloadCacheWarning``) and the cache keeps working
  in memory only.

The trust model (the PTX and cubins found here are loaded and run on the GPU, so whoever
can write the directory can run code as the user): as ssh does with ``~/.ssh``, the
directory is created ``0700`` and used only if it is owned by the user and not writable by
group or others, and an entry's files only if they are owned by the user and not writable
by group or others.
A directory that fails this warns once (``OffloadCacheWarning``) and the cache works in
memory only -- the call compiles and runs, nothing is read from or written to that
directory; a file that fails it is a bad entry (recompiled and replaced, never loaded),
a cubin that fails it a bad cubin (relinked and replaced, never loaded).
The checksum guards against torn or damaged entries, not against an attacker: anyone who
can write a file can write a matching checksum. Metadata is checked for its shape too
(keys, types, flat ``meta``); any problem makes the entry bad. Entries are never
unpickled or evaluated.

Orphans: a writer killed mid-write leaves ``.<name>.*.tmp`` files, or a ``.ptx`` or
``.cubin`` without its ``.json``; ``info`` counts and ``clear`` removes those older than
``ORPHAN_AGE_S`` (a younger one may be a live writer's). ``info`` and ``clear`` raise
``OSError`` for a directory that exists but cannot be listed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from offload.filecache import (
    read_trusted,
    read_trusted_bytes,
    trusted_directory,
    untrusted_reason,
    write_atomic,
)

__all__ = [
    "CacheEntry",
    "KernelCache",
    "OffloadCacheWarning",
    "cache_clear",
    "cache_info",
    "cache_key",
    "untrusted_reason",
]

DEFAULT_MAX_BYTES = 256 << 20
ORPHAN_AGE_S = 60.0
"""A temporary file, ``.ptx`` or ``.cubin`` without metadata older than this is a dead
writer's."""
_SUFFIXES = (".json", ".ptx", ".cubin")
"""An entry's files, the JSON (which vouches for the others) first."""
_META_SCALARS = (str, int, float, bool, type(None))


class OffloadCacheWarning(UserWarning):
    """The kernel cache cannot use its directory (it falls back to memory)."""


@dataclass(frozen=True)
class CacheEntry:
    """A compiled kernel as stored: PTX text, its cubin where there is one, metadata."""

    ptx: str
    kernel_name: str
    meta: dict[str, Any] = field(default_factory=dict[str, Any])
    """Extra facts (register count, kernel source lines...), JSON-serialisable."""
    cubin: bytes | None = None
    """The PTX linked for the key's compute capability (an ELF image), or ``None``."""


@dataclass
class CacheStats:
    memory_hits: int = 0
    disk_hits: int = 0
    misses: int = 0
    corrupt: int = 0
    """Entries on disk that failed their checksum (and were recompiled)."""
    bad_cubins: int = 0
    """Cubins on disk that failed their checksum or trust check (their PTX was used)."""
    evicted: int = 0
    cubin_loads: int = 0
    """Kernels the driver loaded from their cubin (no JIT); counted by the GPU backend."""
    ptx_loads: int = 0
    """Kernels the driver loaded from PTX (JIT-compiled); counted by the GPU backend."""


def cache_key(
    ir_text: str,
    arg_types: Sequence[str],
    options_key: str,
    cc: tuple[int, int],
    versions: Sequence[tuple[str, str]],
) -> str:
    """The sha256 naming one compiled kernel (hex)."""
    h = hashlib.sha256()
    for part in (
        ir_text,
        "|".join(arg_types),
        options_key,
        f"sm_{cc[0]}{cc[1]}",
        ";".join(f"{name}={ver}" for name, ver in versions),
    ):
        h.update(part.encode())
        h.update(b"\0")  # a separator no part contains
    return h.hexdigest()


def _sha(data: str | bytes) -> str:
    return hashlib.sha256(data if isinstance(data, bytes) else data.encode()).hexdigest()


class KernelCache:
    """Two-level cache of compiled kernels (PTX and cubin); ``directory=None`` means memory
    only."""

    def __init__(
        self, directory: str | os.PathLike[str] | None, max_bytes: int = DEFAULT_MAX_BYTES
    ):
        self.directory = Path(directory) if directory is not None else None
        self.max_bytes = max_bytes
        self.stats = CacheStats()
        self._memory: dict[str, CacheEntry] = {}
        self._warned = False
        self._trusted = False
        """The directory passed ``untrusted_reason`` (checked once, on first use)."""

    # -- public ------------------------------------------------------------------------

    def get_or_compile(
        self,
        key: str,
        compile_fn: Callable[[], CacheEntry],
        relink: Callable[[str], bytes | None] | None = None,
    ) -> CacheEntry:
        """The entry for ``key``: from memory, else from disk (verified), else compiled.
        A disk entry whose cubin is bad is returned with the cubin ``relink`` makes of its
        PTX (``None``: without one) and rewritten so."""
        entry = self._memory.get(key)
        if entry is not None:
            self.stats.memory_hits += 1
            return entry
        loaded = self._load(key)
        if loaded is not None:
            self.stats.disk_hits += 1
            entry, cubin_bad = loaded
            if cubin_bad:
                self.stats.bad_cubins += 1
                entry = replace(entry, cubin=relink(entry.ptx) if relink else None)
                self._store(key, entry)
        else:
            self.stats.misses += 1
            entry = compile_fn()
            self._store(key, entry)
        self._memory[key] = entry
        return entry

    def info(self) -> dict[str, Any]:
        """Directory, entry count and size on disk, dead writers' leftovers (``orphans``),
        whether the directory is trusted, and this process's hit counts. ``OSError`` where
        the directory exists but cannot be listed."""
        files = self._entries_on_disk()
        orphans = self._orphans()
        trusted = None
        if self.directory is not None and self.directory.exists():
            trusted = untrusted_reason(os.stat(self.directory)) or "yes"
        return {
            "directory": str(self.directory) if self.directory else None,
            "trusted": trusted,
            "entries": len(files),
            "cubins": sum(1 for _, _, _, cubin in files if cubin),
            "bytes": sum(size for _, size, _, _ in files) + sum(size for _, size in orphans),
            "orphans": len(orphans),
            "max_bytes": self.max_bytes,
            "in_memory": len(self._memory),
            **vars(self.stats),
        }

    def clear(self) -> int:
        """Delete every entry (memory and disk) and the dead writers' leftovers; returns
        how many disk entries and leftovers went. ``OSError`` where the directory exists
        but cannot be listed."""
        self._memory.clear()
        files = self._entries_on_disk()
        for stem, _, _, _ in files:
            self._remove(stem)
        orphans = self._orphans()
        for path, _ in orphans:
            with contextlib.suppress(OSError):
                path.unlink()
        return len(files) + len(orphans)

    # -- disk ----------------------------------------------------------------------------

    def _load(self, key: str) -> tuple[CacheEntry, bool] | None:
        """The verified entry on disk and whether its JSON vouches for a cubin that is
        missing, untrusted or damaged (the entry then comes without it); ``None``: none or
        a bad one."""
        if self.directory is None or not self._trusted_directory():
            return None
        directory = self.directory
        assert directory is not None
        meta_path = directory / f"{key}.json"
        try:
            meta = json.loads(read_trusted(meta_path))
            ptx = read_trusted(directory / f"{key}.ptx")
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            self.stats.corrupt += 1
            return None
        entry = _entry_of(meta, ptx)
        if entry is None:
            self.stats.corrupt += 1
            return None
        cubin_bad = False
        cubin_sha = meta.get("cubin_sha256")
        if cubin_sha is not None:
            try:
                cubin = read_trusted_bytes(directory / f"{key}.cubin")
            except OSError:
                cubin = None
            cubin_bad = cubin is None or _sha(cubin) != cubin_sha
            if not cubin_bad:
                entry = replace(entry, cubin=cubin)
        with contextlib.suppress(OSError):
            os.utime(meta_path)  # LRU: a hit makes the entry young
        return entry, cubin_bad

    def _trusted_directory(self) -> bool:
        """Whether the directory may be used (created ``0700`` if missing); else warn once
        and work in memory only (``self.directory`` becomes ``None``)."""
        if self._trusted:
            return True
        assert self.directory is not None
        try:
            problem = trusted_directory(self.directory)
        except OSError as exc:
            self._fall_back_to_memory(exc)
            return False
        if problem is not None:
            self._warn(
                f"offload: kernel cache directory {self.directory} is not trusted: {problem} "
                f"(a kernel planted there would run as you); kernels are cached in memory "
                f"only. Fix it with: chmod 700 {self.directory} (as its owner), or set "
                "OFFLOAD_CACHE_DIR to a directory of your own"
            )
            self.directory = None
            return False
        self._trusted = True
        return True

    def _store(self, key: str, entry: CacheEntry) -> None:
        if self.directory is None or not self._trusted_directory():
            return
        meta = {"ptx_sha256": _sha(entry.ptx), "kernel_name": entry.kernel_name, "meta": entry.meta}
        if entry.cubin is not None:
            meta["cubin_sha256"] = _sha(entry.cubin)
        assert self.directory is not None
        try:
            # The PTX and the cubin first, the JSON (which vouches for them) last. A cubin
            # left from an earlier entry that had one is not vouched for: never loaded.
            write_atomic(self.directory / f"{key}.ptx", entry.ptx)
            if entry.cubin is not None:
                write_atomic(self.directory / f"{key}.cubin", entry.cubin)
            write_atomic(self.directory / f"{key}.json", json.dumps(meta, indent=1))
        except OSError as exc:
            self._fall_back_to_memory(exc)
            return
        self._evict()

    def _fall_back_to_memory(self, exc: OSError) -> None:
        self._warn(
            f"offload: kernel cache directory {self.directory} is not writable ({exc}); "
            "kernels are cached in memory only (set OFFLOAD_CACHE_DIR to change it)"
        )
        self.directory = None

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(message, OffloadCacheWarning, stacklevel=5)

    def _listing(self) -> list[str]:
        """The names in the directory; none where it does not exist (yet); ``OSError``
        where it exists but cannot be listed (not a directory, no permission)."""
        if self.directory is None:
            return []
        try:
            with os.scandir(self.directory) as it:
                return [e.name for e in it]
        except FileNotFoundError:
            return []

    def _entries_on_disk(self) -> list[tuple[str, int, float, bool]]:
        """(key, bytes of .ptx + .json + .cubin, mtime of .json, whether a .cubin is
        there) per complete entry."""
        if self.directory is None:
            return []
        names = set(self._listing())
        out = []
        for name in names:
            if name.startswith(".") or not name.endswith(".json"):
                continue
            meta_path = self.directory / name
            cubin = f"{meta_path.stem}.cubin" in names
            try:
                st = meta_path.stat()
                size = st.st_size + meta_path.with_suffix(".ptx").stat().st_size
                if cubin:
                    size += meta_path.with_suffix(".cubin").stat().st_size
            except OSError:
                continue  # a concurrent eviction or a half-written entry
            out.append((meta_path.stem, size, st.st_mtime, cubin))
        return out

    def _orphans(self) -> list[tuple[Path, int]]:
        """(path, bytes) of each dead writer's leftover: a temporary file, or a ``.ptx`` or
        ``.cubin`` without its ``.json``, older than ``ORPHAN_AGE_S``."""
        if self.directory is None:
            return []
        names = set(self._listing())
        old = time.time() - ORPHAN_AGE_S
        out = []
        for name in names:
            tmp = name.startswith(".") and name.endswith(".tmp")
            stem, dot, suffix = name.rpartition(".")
            lone = dot == "." and suffix in ("ptx", "cubin") and f"{stem}.json" not in names
            if not (tmp or lone):
                continue
            path = self.directory / name
            try:
                st = path.lstat()
            except OSError:
                continue  # gone meanwhile (its writer finished)
            if stat.S_ISREG(st.st_mode) and st.st_mtime < old:
                out.append((path, st.st_size))
        return out

    def _remove(self, key: str) -> None:
        assert self.directory is not None
        for suffix in _SUFFIXES:  # the JSON first: the entry stops being valid
            with contextlib.suppress(OSError):
                (self.directory / f"{key}{suffix}").unlink()

    def _evict(self) -> None:
        files = self._entries_on_disk()
        total = sum(size for _, size, _, _ in files)
        for key, size, _, _ in sorted(files, key=lambda f: f[2]):
            if total <= self.max_bytes:
                break
            self._remove(key)
            self._memory.pop(key, None)
            total -= size
            self.stats.evicted += 1


def _entry_of(meta: object, ptx: str) -> CacheEntry | None:
    """The entry (without its cubin) that metadata ``meta`` describes for ``ptx``, or
    ``None`` where ``meta`` does not have the shape ``_store`` writes or its checksum does
    not match ``ptx``."""
    if not isinstance(meta, dict):
        return None
    sha, name, extra = meta.get("ptx_sha256"), meta.get("kernel_name"), meta.get("meta")
    if not (isinstance(sha, str) and isinstance(name, str) and isinstance(extra, dict)):
        return None
    if not isinstance(meta.get("cubin_sha256", ""), str):
        return None
    if sha != _sha(ptx):
        return None
    for k, v in extra.items():
        if not isinstance(k, str) or not isinstance(v, _META_SCALARS):
            return None
    return CacheEntry(ptx, name, dict(extra))


def cache_info(directory: str | os.PathLike[str] | None) -> dict[str, Any]:
    """``python -m offload cache info``: entries and bytes in ``directory`` (``OSError``
    where it exists but cannot be listed)."""
    return KernelCache(directory).info()


def cache_clear(directory: str | os.PathLike[str] | None) -> int:
    """``python -m offload cache clear``: delete every entry and dead writers' leftovers;
    returns how many went (``OSError`` where the directory exists but cannot be listed)."""
    return KernelCache(directory).clear()
