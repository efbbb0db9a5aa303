"""What every on-disk kernel cache (PTX: ``offload.ptx.cache``; CPU: ``offload.cpu.diskcache``)
shares: the trust rule for its directory and files, and atomic writes.

The trust model: whatever is found in a cache directory is loaded and run as the user, so,
as ssh does with ``~/.ssh``, a directory (and each file read from it) is used only if it is
owned by the user and not writable by group or others. A leaf module: it imports nothing of
offload, so that both backends may use it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


def untrusted_reason(st: os.stat_result, uid: int | None = None) -> str | None:
    """Why a cache directory (or file) with status ``st`` must not be trusted by user
    ``uid`` (default: this process's), or ``None``: it must be owned by ``uid`` and not
    writable by group or others. Where the platform has no uids (Windows) it is trusted."""
    if uid is None:
        if not hasattr(os, "getuid"):
            return None
        uid = os.getuid()
    if st.st_uid != uid:
        return f"it is owned by uid {st.st_uid}, not by you (uid {uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"it is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def read_trusted(path: Path) -> str:
    """The text of ``path``; ``OSError`` where the file is not trusted (``untrusted_reason``)
    -- checked on the open file, so a rename in between cannot swap it."""
    with open(path, encoding="utf-8") as f:
        _check_open(f.fileno(), path)
        return f.read()


def read_trusted_bytes(path: Path) -> bytes:
    """The bytes of ``path`` (a binary file: a cubin), trusted as ``read_trusted``'s text."""
    with open(path, "rb") as f:
        _check_open(f.fileno(), path)
        return f.read()


def _check_open(fd: int, path: Path) -> None:
    problem = untrusted_reason(os.fstat(fd))
    if problem is not None:
        raise PermissionError(f"untrusted cache file {path}: {problem}")


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text, or bytes written as they are) to ``path`` through a temporary
    file and ``os.replace``: readers see the old file or the whole new one, never half."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def trusted_directory(directory: Path) -> str | None:
    """Create ``directory`` (``0700``) if missing; ``None`` where it may be used, else why
    not (``OSError`` where it cannot be created or examined)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    return untrusted_reason(os.stat(directory))
