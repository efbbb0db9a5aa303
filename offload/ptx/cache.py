"""The kernel cache: an in-process dict and a directory of ``<key>.ptx`` + ``<key>.json``.

* The key is a sha256 over the printed optimised IR, the argument types, the compile
  options, the compute capability and the tool versions (``cache_key``) -- never mtimes,
  salted ``hash()`` or object ids, so that it is the same in every process.
* Entries are written to a temporary file and ``os.replace``d: readers never see half a
  file, and several processes writing one key all write the same bytes. The JSON is written
  last and carries the PTX's sha256; an entry whose PTX does not match is recompiled and
  rewritten, never trusted. No pickle.
* The directory is bounded: past ``max_bytes``, least recently used entries (by mtime,
  touched on every hit) are deleted.
* An unwritable directory warns once (``OffloadCacheWarning``) and the cache keeps working
  in memory only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_MAX_BYTES = 256 << 20


class OffloadCacheWarning(UserWarning):
    """The kernel cache cannot use its directory (it falls back to memory)."""


@dataclass(frozen=True)
class CacheEntry:
    """A compiled kernel as stored: PTX text and its metadata."""

    ptx: str
    kernel_name: str
    meta: dict[str, Any] = field(default_factory=dict[str, Any])
    """Extra facts (register count, kernel source lines...), JSON-serialisable."""


@dataclass
class CacheStats:
    memory_hits: int = 0
    disk_hits: int = 0
    misses: int = 0
    corrupt: int = 0
    """Entries on disk that failed their checksum (and were recompiled)."""
    evicted: int = 0


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


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class KernelCache:
    """Two-level cache of compiled kernels (PTX); ``directory=None`` means memory only."""

    def __init__(
        self, directory: str | os.PathLike[str] | None, max_bytes: int = DEFAULT_MAX_BYTES
    ):
        self.directory = Path(directory) if directory is not None else None
        self.max_bytes = max_bytes
        self.stats = CacheStats()
        self._memory: dict[str, CacheEntry] = {}
        self._warned = False

    # -- public ------------------------------------------------------------------------

    def get_or_compile(self, key: str, compile_fn: Callable[[], CacheEntry]) -> CacheEntry:
        """The entry for ``key``: from memory, else from disk (verified), else compiled."""
        entry = self._memory.get(key)
        if entry is not None:
            self.stats.memory_hits += 1
            return entry
        entry = self._load(key)
        if entry is not None:
            self.stats.disk_hits += 1
        else:
            self.stats.misses += 1
            entry = compile_fn()
            self._store(key, entry)
        self._memory[key] = entry
        return entry

    def info(self) -> dict[str, Any]:
        """Directory, entry count and size on disk, and this process's hit counts."""
        files = self._entries_on_disk()
        return {
            "directory": str(self.directory) if self.directory else None,
            "entries": len(files),
            "bytes": sum(size for _, size, _ in files),
            "max_bytes": self.max_bytes,
            "in_memory": len(self._memory),
            **vars(self.stats),
        }

    def clear(self) -> int:
        """Delete every entry (memory and disk); returns how many disk entries went."""
        self._memory.clear()
        files = self._entries_on_disk()
        for stem, _, _ in files:
            self._remove(stem)
        return len(files)

    # -- disk ----------------------------------------------------------------------------

    def _load(self, key: str) -> CacheEntry | None:
        if self.directory is None:
            return None
        meta_path = self.directory / f"{key}.json"
        try:
            meta = json.loads(meta_path.read_text())
            ptx = (self.directory / f"{key}.ptx").read_text()
        except FileNotFoundError:
            return None
        except (OSError, ValueError, UnicodeDecodeError):
            self.stats.corrupt += 1
            return None
        if not isinstance(meta, dict) or meta.get("ptx_sha256") != _sha(ptx):
            self.stats.corrupt += 1
            return None
        with contextlib.suppress(OSError):
            os.utime(meta_path)  # LRU: a hit makes the entry young
        return CacheEntry(ptx, str(meta["kernel_name"]), dict(meta.get("meta", {})))

    def _store(self, key: str, entry: CacheEntry) -> None:
        if self.directory is None:
            return
        meta = {"ptx_sha256": _sha(entry.ptx), "kernel_name": entry.kernel_name, "meta": entry.meta}
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # The PTX first, the JSON (which vouches for it) last.
            self._write_atomic(self.directory / f"{key}.ptx", entry.ptx)
            self._write_atomic(self.directory / f"{key}.json", json.dumps(meta, indent=1))
        except OSError as exc:
            self._fall_back_to_memory(exc)
            return
        self._evict()

    def _write_atomic(self, path: Path, text: str) -> None:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _fall_back_to_memory(self, exc: OSError) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"offload: kernel cache directory {self.directory} is not writable ({exc}); "
                "kernels are cached in memory only (set OFFLOAD_CACHE_DIR to change it)",
                OffloadCacheWarning,
                stacklevel=4,
            )
        self.directory = None

    def _entries_on_disk(self) -> list[tuple[str, int, float]]:
        """(key, bytes of .ptx + .json, mtime of .json) per complete entry."""
        if self.directory is None or not self.directory.is_dir():
            return []
        out = []
        for meta_path in self.directory.glob("*.json"):
            try:
                st = meta_path.stat()
                size = st.st_size + meta_path.with_suffix(".ptx").stat().st_size
            except OSError:
                continue  # a concurrent eviction or a half-written entry
            out.append((meta_path.stem, size, st.st_mtime))
        return out

    def _remove(self, key: str) -> None:
        assert self.directory is not None
        for suffix in (".json", ".ptx"):  # the JSON first: the entry stops being valid
            with contextlib.suppress(OSError):
                (self.directory / f"{key}{suffix}").unlink()

    def _evict(self) -> None:
        files = self._entries_on_disk()
        total = sum(size for _, size, _ in files)
        for key, size, _ in sorted(files, key=lambda f: f[2]):
            if total <= self.max_bytes:
                break
            self._remove(key)
            self._memory.pop(key, None)
            total -= size
            self.stats.evicted += 1


def cache_info(directory: str | os.PathLike[str] | None) -> dict[str, Any]:
    """``python -m offload cache info``: entries and bytes in ``directory``."""
    return KernelCache(directory).info()


def cache_clear(directory: str | os.PathLike[str] | None) -> int:
    """``python -m offload cache clear``: delete every entry; returns how many went."""
    return KernelCache(directory).clear()
