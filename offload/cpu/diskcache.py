"""The CPU kernels' disk cache: a fresh process reuses a compiled ``compute_s``/``compute_p``
kernel instead of paying numba's 0.4-2 s compile again.

numba caches machine code only for functions defined in a source file (``cache=True`` finds
its cache by the function's file), and offload's kernels are generated source. So each
kernel's source is written once to ``<cache_dir>/cpu/k<key>.py`` -- the key a sha256 over the
source, the options, the backend and the tool versions, as the PTX cache's
(``offload.ptx.cache.cache_key``) -- and the function is compiled from that file with
``numba.njit(cache=True)``: numba keeps the object code beside it
(``cpu/__pycache__/k<key>.kernel-*.nbi/.nbc``) and checks its own index (argument types, CPU,
numba version, the file's size and mtime) on load.

Trust: numba's index and object files are pickles, and the kernel file is Python, so the
PTX cache's rule applies (``offload.filecache``): ``<cache_dir>`` and ``cpu/`` are used only if
owned by the user and not writable by group or others, and a kernel file only if it is the
user's and has exactly the expected text (otherwise it is rewritten). A directory that fails
is not used: kernels compile in memory, as before, and one ``OffloadCacheWarning`` says why.
The directory is bounded (``max_bytes``): past it, the least recently used kernels (by the
newest mtime of their files; a load touches numba's index) are deleted with their numba
files. The size is looked at on the first new kernel of a process and every
``EVICT_EVERY`` after, each look one listing of each folder and a stat per file.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import os
import platform
import sys
import threading
import time
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from offload.filecache import read_trusted, trusted_directory, untrusted_reason, write_atomic

SUBDIR = "cpu"
DEFAULT_MAX_BYTES = 256 << 20
EVICT_EVERY = 16
"""Misses between two looks at the directory's size: the bound may be passed by at most
this many new kernels meanwhile (a look stats every file of the cache)."""
ORPHAN_AGE_S = 60.0


class CpuCacheWarning(UserWarning):
    """The CPU kernel cache directory cannot be used; kernels compile in memory only."""


@functools.cache
def tool_versions() -> str:
    """What the machine code depends on besides the source: offload, numba, llvmlite,
    Python and the machine (numba's index adds the CPU name and features)."""
    import llvmlite
    import numba

    try:
        offload = importlib.metadata.version("offload")
    except importlib.metadata.PackageNotFoundError:
        offload = "0+unknown"
    return (
        f"offload={offload};numba={numba.__version__};llvmlite={llvmlite.__version__};"
        f"python={sys.version_info[:3]};machine={platform.machine()}"
    )


def kernel_key(source: str, options_key: str, backend: str) -> str:
    """The cache key of a CPU kernel: sha256 over its source, options, backend, versions."""
    text = "\n".join([backend, options_key, tool_versions(), source])
    return hashlib.sha256(text.encode()).hexdigest()[:40]


class CpuDiskCache:
    """Kernel functions defined from files in ``<directory>/cpu`` (see the module doc)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, evict_every: int = EVICT_EVERY) -> None:
        self.max_bytes = max_bytes
        self.evict_every = evict_every
        """Misses between two looks at the directory's size (the first miss looks)."""
        self._misses_left = 0
        self._directory: Path | None = None
        self._checked: Path | None = None
        """The ``cpu/`` folder that passed the trust checks (``None``: not yet, or failed)."""
        self._refused: set[Path] = set()
        self._numba: dict[Path, _NumbaIndex] = {}
        """Per folder, numba's files by kernel stem (``_numba_files_of``)."""
        self._given: object = None
        """The object last passed to ``use``."""
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def use(self, directory: str | os.PathLike[str] | None) -> None:
        """Cache under ``directory`` (``ol.config.cache_dir``); ``None`` turns it off."""
        if directory is not None and directory is self._given:
            return  # ol.config's own object again (every call): no path to parse
        self._given = directory
        path = Path(directory) if directory is not None else None
        if path != self._directory:
            with self._lock:
                self._directory, self._checked = path, None

    def function(self, key: str, source: str, name: str) -> Callable[..., Any] | None:
        """The function ``name`` defined by ``source``, from the file of ``key`` (written if
        missing or different), or ``None`` where there is no usable directory."""
        folder = self._folder()
        if folder is None:
            return None
        path = folder / f"k{key}.py"
        try:
            fresh = _read_or_none(path) != source
            if fresh:
                write_atomic(path, source)
                self.misses += 1
            else:
                _touch(self._numba_files_of(path))  # LRU: a load makes the kernel young
                self.hits += 1
        except OSError as exc:
            self._refuse(folder, f"it is not writable ({exc})")
            return None
        # A module registered under its name, as an import would: numba's cached code
        # refers to the kernel's globals by their module.
        name_of_module = f"offload_cpu_kernel_{key}"
        module = sys.modules.get(name_of_module)
        if module is None or getattr(module, "__file__", None) != str(path):
            module = types.ModuleType(name_of_module)
            module.__file__ = str(path)
            exec(compile(source, str(path), "exec"), module.__dict__)
            sys.modules[name_of_module] = module
        if fresh:
            self._misses_left -= 1
            if self._misses_left < 0:
                self._misses_left = self.evict_every - 1
                self._evict(folder, keep=path)
        fn: Callable[..., Any] = module.__dict__[name]
        return fn

    def _numba_files_of(self, path: Path) -> list[Path]:
        """numba's files of the kernel file ``path``, from a listing of ``__pycache__``
        made once per process (again where ``path``'s are missing from it: written since)."""
        index = self._numba.get(path.parent)
        if index is None or path.stem not in index:
            index = self._numba[path.parent] = _numba_index(path.parent)
        return index.get(path.stem)

    def _folder(self) -> Path | None:
        checked = self._checked
        if checked is not None:
            return checked
        with self._lock:
            if self._directory is None:
                return None
            folder = self._directory / SUBDIR
            if folder in self._refused:
                return None
            try:
                problem = trusted_directory(self._directory) or trusted_directory(folder)
            except OSError as exc:
                problem = f"it cannot be created ({exc})"
            if problem is not None:
                self._refuse(folder, problem)
                return None
            self._checked = folder
            return folder

    def _refuse(self, folder: Path, problem: str) -> None:
        self._refused.add(folder)
        self._checked = None
        warnings.warn(
            f"offload: CPU kernel cache directory {folder} is not used: {problem}; CPU "
            "kernels are compiled in every process (set OFFLOAD_CACHE_DIR to a directory of "
            "your own, mode 0700)",
            CpuCacheWarning,
            stacklevel=6,
        )

    def _evict(self, folder: Path, keep: Path) -> None:
        numba = _numba_index(folder)
        kernels = _kernels(folder, numba)
        total = sum(size for _, size, _ in kernels)
        for path, size, _ in sorted(kernels, key=lambda k: k[2]):
            if total <= self.max_bytes:
                break
            if path != keep:
                _remove_kernel(path, numba.get(path.stem))
                total -= size


def _read_or_none(path: Path) -> str | None:
    try:
        return read_trusted(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return None  # untrusted or damaged: rewritten (write_atomic replaces the file)


def _touch(files: list[Path]) -> None:
    """Mark a kernel used: its numba index files' mtime, not the source's (numba before 0.61
    took the source file's mtime as its freshness stamp: touching it would make every
    cached specialisation stale)."""
    for f in files:
        if f.suffix == ".nbi":
            with contextlib.suppress(OSError):
                os.utime(f)


def _numba_files(path: Path) -> list[Path]:
    pycache = path.parent / "__pycache__"
    try:
        names = os.listdir(pycache)
    except OSError:
        return []
    prefix = f"{path.stem}."
    return [pycache / n for n in names if n.startswith(prefix)]


class _NumbaIndex:
    """numba's files in a folder's ``__pycache__`` by the stem of the kernel file they belong
    to: names from one listing, made into paths only for the stems looked up (a cache of a
    few thousand kernels: ~8 ms to index, where a path per file cost ~30 ms)."""

    def __init__(self, pycache: Path, names: list[str]) -> None:
        self._pycache = pycache
        self._names: dict[str, list[str]] = {}
        for n in names:
            self._names.setdefault(n.split(".", 1)[0], []).append(n)

    def __contains__(self, stem: str) -> bool:
        return stem in self._names

    def get(self, stem: str) -> list[Path]:
        """The paths of ``stem``'s files (none: empty)."""
        return [self._pycache / n for n in self._names.get(stem, ())]


def _numba_index(folder: Path) -> _NumbaIndex:
    """numba's files in ``folder``'s ``__pycache__`` (one listing: a listing per kernel made
    a look at a cache of N kernels cost N listings of 3N names -- seconds per compile with
    a few thousand kernels)."""
    pycache = folder / "__pycache__"
    try:
        names = os.listdir(pycache)
    except OSError:
        names = []
    return _NumbaIndex(pycache, names)


def _kernels(folder: Path, numba: _NumbaIndex | None = None) -> list[tuple[Path, int, float]]:
    """(kernel file, bytes with its numba files, mtime) per cached kernel in ``folder``."""
    out = []
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    if numba is None:
        numba = _numba_index(folder)
    for name in names:
        if not (name.startswith("k") and name.endswith(".py")):
            continue
        path = folder / name
        try:
            stats = [path.stat(), *(f.stat() for f in numba.get(path.stem))]
        except OSError:
            continue  # removed meanwhile
        out.append((path, sum(st.st_size for st in stats), max(st.st_mtime for st in stats)))
    return out


def _remove_kernel(path: Path, numba: list[Path] | None = None) -> None:
    files = _numba_files(path) if numba is None else numba
    for f in [path, *files]:  # the source first: the entry stops being found
        with contextlib.suppress(OSError):
            f.unlink()


def _orphans(folder: Path) -> list[Path]:
    """Dead writers' temporary files and numba files whose kernel file is gone."""
    old = time.time() - ORPHAN_AGE_S
    out: list[Path] = []
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            path = folder / name
            if name.startswith(".") and name.endswith(".tmp") and path.stat().st_mtime < old:
                out.append(path)
    pycache = folder / "__pycache__"
    with contextlib.suppress(OSError):
        for name in os.listdir(pycache):
            stem = name.split(".", 1)[0]
            if not (folder / f"{stem}.py").exists():
                out.append(pycache / name)
    return out


def cpu_cache_info(directory: str | os.PathLike[str] | None) -> dict[str, Any]:
    """``python -m offload cache info``'s CPU lines: kernels and bytes under
    ``<directory>/cpu`` (``OSError`` where it exists but cannot be listed)."""
    if directory is None:
        return {"cpu_entries": 0, "cpu_bytes": 0}
    folder = Path(directory) / SUBDIR
    kernels = _kernels(folder)
    trusted = None
    if folder.exists():
        trusted = untrusted_reason(os.stat(folder)) or "yes"
    return {
        "cpu_entries": len(kernels),
        "cpu_bytes": sum(size for _, size, _ in kernels),
        "cpu_trusted": trusted,
    }


def cpu_cache_clear(directory: str | os.PathLike[str] | None) -> int:
    """Delete every cached CPU kernel (and leftovers) under ``<directory>/cpu``; returns how
    many kernels went."""
    if directory is None:
        return 0
    folder = Path(directory) / SUBDIR
    numba = _numba_index(folder)
    kernels = _kernels(folder, numba)
    for path, _, _ in kernels:
        _remove_kernel(path, numba.get(path.stem))
    for path in _orphans(folder):
        with contextlib.suppress(OSError):
            path.unlink()
    return len(kernels)
