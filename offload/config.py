"""``ol.config``: the one place that reads ``OFFLOAD_*`` environment variables.

Every field can be set from the environment at import time or assigned at run time::

    import offload as ol
    ol.config.bounds_check = True

| variable                 | field            | default                       |
|--------------------------|------------------|-------------------------------|
| OFFLOAD_CACHE_DIR        | cache_dir        | $XDG_CACHE_HOME/offload, else |
|                          |                  | ~/.cache/offload              |
| OFFLOAD_MEMORY           | memory           | unified (or device)           |
| OFFLOAD_BOUNDS_CHECK     | bounds_check     | 0                             |
| OFFLOAD_FASTMATH         | fastmath         | 0                             |
| OFFLOAD_PIPELINE         | pipeline         | (the default pipeline)        |
| OFFLOAD_DISABLE_PASSES   | disabled_passes  | (none) e.g. "select,divmod"   |
| OFFLOAD_VERIFY           | verify           | 0 (verify IR after each pass) |
| OFFLOAD_DUMP             | dump             | (none) e.g. "ir,source,ptx"   |
| OFFLOAD_DETERMINISM      | determinism      | deterministic (cross_target,  |
|                          |                  | fast: docs/collectives.md)    |
| OFFLOAD_DEBUG            | debug            | 0 (re-raise internal errors)  |
| OFFLOAD_GPU_SIMULATOR    | gpu_simulator    | value of NUMBA_ENABLE_CUDASIM |
| OFFLOAD_DEVICE_MEMORY_LIMIT | device_memory_limit | (none: free GPU memory), e.g. 4G |
| OFFLOAD_PROGRESS         | progress         | (auto: on in a terminal)      |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from offload.options import CompileOptions

_TRUE = {"1", "true", "yes", "on"}


def _flag(env: Mapping[str, str], name: str, default: bool = False) -> bool:
    value = env.get(name)
    return default if value is None else value.strip().lower() in _TRUE


def _names(env: Mapping[str, str], name: str) -> frozenset[str]:
    return frozenset(p.strip() for p in env.get(name, "").split(",") if p.strip())


_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _bytes(env: Mapping[str, str], name: str) -> int | None:
    """A number of bytes, with an optional binary unit: ``4294967296``, ``512M``, ``4G``."""
    value = env.get(name, "").strip()
    if not value:
        return None
    unit = _UNITS.get(value[-1].lower(), 1)
    try:
        return int(float(value[:-1] if unit > 1 else value) * unit)
    except ValueError:
        raise ValueError(
            f"{name} must be a number of bytes (e.g. 4294967296 or 4G), got {value!r}"
        ) from None


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/offload``, else ``~/.cache/offload`` (the XDG base directory
    rule: a relative ``XDG_CACHE_HOME`` is invalid and ignored)."""
    xdg = (os.environ if env is None else env).get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "offload"


_KERNEL_DUMPS = frozenset({"source", "ptx"})
"""``dump`` entries that print kernels rather than IR."""


DETERMINISM_MODES = ("deterministic", "cross_target", "fast")


def _check_determinism(value: object, what: str) -> None:
    if value not in DETERMINISM_MODES:
        raise ValueError(f"{what} must be one of {', '.join(DETERMINISM_MODES)}, got {value!r}")


@dataclass
class Config:
    """Run-time configuration of offload (see the module docstring for the variables)."""

    cache_dir: Path = field(default_factory=default_cache_dir)
    """Where compiled GPU kernels are cached on disk (used only if owned by the user and
    not writable by group or others: ``offload.ptx.cache``)."""
    memory: str = "unified"
    """GPU memory mode: ``unified`` (NumPy results over managed memory) or ``device``."""
    bounds_check: bool = False
    """Check captured-array reads; an out-of-bounds read raises ``IndexError``."""
    fastmath: bool = False
    """Allow value-changing float rewrites (reassociation, ``x*0 -> 0``)."""
    determinism: str = "deterministic"
    """How collectives fix their reduction trees (docs/collectives.md): ``deterministic``
    (the same bits run to run on a target, the tree fixed by the sizes), ``cross_target``
    (the same bits on every target: every target uses the GPU's tree) or ``fast`` (today
    the same trees as ``deterministic``)."""
    pipeline: str | None = None
    """Optimiser pipeline text; ``None`` for the default."""
    disabled_passes: frozenset[str] = frozenset()
    """Passes switched off (benchmarks' ablations)."""
    verify: bool = False
    """Verify the IR after every pass (slower; on in the test suite)."""
    dump: frozenset[str] = frozenset()
    """What to print while compiling: ``ir`` (the IR after every pass of every pipeline),
    a pass name (the IR after that pass), ``source`` (each kernel's generated source),
    ``ptx`` (each GPU kernel's PTX)."""
    debug: bool = False
    """Re-raise internal errors with their compiler frames instead of a clean message."""
    gpu_simulator: bool = False
    """Run ``compute_g`` under numba's CUDA simulator."""
    device_memory_limit: int | None = None
    """Bytes of device memory ``compute_g`` may use for captured host arrays and results;
    beyond it the call is streamed in chunks (``offload.stream``). ``None``: the GPU's
    free memory (a call refused with ``MemoryError`` is streamed)."""
    progress: bool | None = None
    """A progress bar for long streamed runs: ``None`` shows it in a terminal after a
    second, ``True`` always, ``False`` never."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Config:
        e = os.environ if env is None else env
        memory = e.get("OFFLOAD_MEMORY", "unified").strip().lower()
        if memory not in ("unified", "device"):
            raise ValueError(f"OFFLOAD_MEMORY must be 'unified' or 'device', got {memory!r}")
        determinism = e.get("OFFLOAD_DETERMINISM", "deterministic").strip().lower()
        _check_determinism(determinism, "OFFLOAD_DETERMINISM")
        cache = e.get("OFFLOAD_CACHE_DIR")
        return cls(
            cache_dir=Path(cache) if cache else default_cache_dir(e),
            memory=memory,
            bounds_check=_flag(e, "OFFLOAD_BOUNDS_CHECK"),
            fastmath=_flag(e, "OFFLOAD_FASTMATH"),
            determinism=determinism,
            pipeline=e.get("OFFLOAD_PIPELINE") or None,
            disabled_passes=_names(e, "OFFLOAD_DISABLE_PASSES"),
            verify=_flag(e, "OFFLOAD_VERIFY"),
            dump=_names(e, "OFFLOAD_DUMP"),
            debug=_flag(e, "OFFLOAD_DEBUG"),
            gpu_simulator=_flag(e, "OFFLOAD_GPU_SIMULATOR", _flag(e, "NUMBA_ENABLE_CUDASIM")),
            device_memory_limit=_bytes(e, "OFFLOAD_DEVICE_MEMORY_LIMIT"),
            progress=_flag(e, "OFFLOAD_PROGRESS") if e.get("OFFLOAD_PROGRESS") else None,
        )

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "memory" and value not in ("unified", "device"):
            raise ValueError(f"config.memory must be 'unified' or 'device', got {value!r}")
        if name == "determinism":
            _check_determinism(value, "config.determinism")
        if name in ("disabled_passes", "dump") and not isinstance(value, frozenset):
            value = frozenset(value)
        if name == "cache_dir":
            value = Path(value)
        object.__setattr__(self, name, value)
        object.__setattr__(self, "_options", None)

    def compile_options(self) -> CompileOptions:
        """The ``CompileOptions`` these settings give (cached until a field changes)."""
        cached: CompileOptions | None = self.__dict__.get("_options")
        if cached is None:
            cached = CompileOptions(
                pipeline=self.pipeline,
                disabled_passes=self.disabled_passes,
                bounds_check=self.bounds_check,
                fastmath=self.fastmath,
                verify=self.verify,
                print_after=frozenset(
                    "all" if d == "ir" else d for d in self.dump if d not in _KERNEL_DUMPS
                ),
                print_kernels=self.dump & _KERNEL_DUMPS,
            )
            object.__setattr__(self, "_options", cached)
        return cached

    def __repr__(self) -> str:
        items = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self))
        return f"Config({items})"


config = Config.from_env()
"""The process-wide configuration (``ol.config``)."""
