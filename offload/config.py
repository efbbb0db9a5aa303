"""``ol.config``: the one place that reads ``OFFLOAD_*`` environment variables.

Every field can be set from the environment at import time or assigned at run time::

    import offload as ol
    ol.config.bounds_check = True

Both are checked: an unknown name (``ol.config.fast_math``) is an ``AttributeError`` listing
the valid ones, a value of the wrong type (``bounds_check = "no"``) a ``TypeError``, and an
environment value that is not one of the accepted spellings (``OFFLOAD_FASTMATH=maybe``) a
``ValueError`` at import naming the variable. Flags take 1/true/yes/on or 0/false/no/off (any
case; empty means the default).

To add a setting: a field of ``Config`` (with its docstring) and one row of ``SETTINGS``
(its variable and kind); the checks, the environment parsing and the error messages follow.

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

import difflib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from offload.options import CompileOptions

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
FLAG_SPELLINGS = "1, true, yes, on / 0, false, no, off"


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/offload``, else ``~/.cache/offload`` (the XDG base directory
    rule: a relative ``XDG_CACHE_HOME`` is invalid and ignored)."""
    xdg = (os.environ if env is None else env).get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "offload"


_KERNEL_DUMPS = frozenset({"source", "ptx"})
"""``dump`` entries that print kernels rather than IR."""


# -- kinds of setting: how a value is checked when assigned and parsed from the environment


def _flag_value(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if type(value).__name__ == "bool_":  # np.bool_
        return bool(value)
    raise TypeError(f"config.{name} takes True or False, got {value!r} ({type(value).__name__})")


def _flag_env(var: str, text: str) -> bool:
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(f"{var}={text!r} is not a flag: use one of {FLAG_SPELLINGS}")


def _names_value(name: str, value: Any) -> frozenset[str]:
    if isinstance(value, str):
        return _names_env(name, value)
    if not isinstance(value, Iterable) or not all(isinstance(v, str) for v in value):
        raise TypeError(
            f"config.{name} takes a set of names (or a comma-separated string), got {value!r}"
        )
    return frozenset(value)


def _names_env(var: str, text: str) -> frozenset[str]:
    return frozenset(p.strip() for p in text.split(",") if p.strip())


def _path_value(name: str, value: Any) -> Path:
    if not isinstance(value, str | os.PathLike):
        raise TypeError(f"config.{name} takes a path (str or os.PathLike), got {value!r}")
    return Path(value)


def _optional_text_value(name: str, value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"config.{name} takes a string or None, got {value!r}")
    return value


def _choice(*choices: str) -> tuple[Callable[[str, Any], Any], Callable[[str, str], Any]]:
    listed = " or ".join(repr(c) for c in choices)

    def value(name: str, v: Any) -> str:
        if not isinstance(v, str):
            raise TypeError(f"config.{name} takes {listed}, got {v!r}")
        if v not in choices:
            raise ValueError(f"config.{name} must be {listed}, got {v!r}")
        return v

    def env(var: str, text: str) -> str:
        word = text.strip().lower()
        if word not in choices:
            raise ValueError(f"{var} must be {listed}, got {text!r}")
        return word

    return value, env


_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _bytes_env(var: str, text: str) -> int | None:
    """A number of bytes, with an optional binary unit: ``4294967296``, ``512M``, ``4G``."""
    value = text.strip()
    if not value:
        return None
    unit = _UNITS.get(value[-1].lower(), 1)
    try:
        got = int(float(value[:-1] if unit > 1 else value) * unit)
    except ValueError:
        raise ValueError(
            f"{var} must be a number of bytes (e.g. 4294967296 or 4G), got {text!r}"
        ) from None
    if got <= 0:
        raise ValueError(f"{var} must be a positive number of bytes, got {text!r}")
    return got


def _bytes_value(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, str):
        return _bytes_env(f"config.{name}", value)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise TypeError(
            f"config.{name} takes a positive number of bytes (an int, or a string such as "
            f"'4G'), or None, got {value!r}"
        )
    return value


def _optional_flag_value(name: str, value: Any) -> bool | None:
    return None if value is None else _flag_value(name, value)


@dataclass(frozen=True)
class Setting:
    """How one ``Config`` field is set: its environment variable, the check (and
    normalisation) of an assigned value, and the strict parse of the variable's text."""

    env: str
    check: Callable[[str, Any], Any]
    parse: Callable[[str, str], Any]


DETERMINISM_MODES = ("deterministic", "cross_target", "fast")

_FLAG = (_flag_value, _flag_env)
_NAMES = (_names_value, _names_env)
_MEMORY = _choice("unified", "device")

SETTINGS: dict[str, Setting] = {
    "cache_dir": Setting("OFFLOAD_CACHE_DIR", _path_value, lambda var, text: Path(text)),
    "memory": Setting("OFFLOAD_MEMORY", *_MEMORY),
    "bounds_check": Setting("OFFLOAD_BOUNDS_CHECK", *_FLAG),
    "fastmath": Setting("OFFLOAD_FASTMATH", *_FLAG),
    "pipeline": Setting("OFFLOAD_PIPELINE", _optional_text_value, lambda var, text: text),
    "disabled_passes": Setting("OFFLOAD_DISABLE_PASSES", *_NAMES),
    "verify": Setting("OFFLOAD_VERIFY", *_FLAG),
    "dump": Setting("OFFLOAD_DUMP", *_NAMES),
    "debug": Setting("OFFLOAD_DEBUG", *_FLAG),
    "gpu_simulator": Setting("OFFLOAD_GPU_SIMULATOR", *_FLAG),
    "determinism": Setting("OFFLOAD_DETERMINISM", *_choice(*DETERMINISM_MODES)),
    "device_memory_limit": Setting("OFFLOAD_DEVICE_MEMORY_LIMIT", _bytes_value, _bytes_env),
    "progress": Setting("OFFLOAD_PROGRESS", _optional_flag_value, _flag_env),
}
"""Every setting's variable and kind (one row per ``Config`` field)."""


@dataclass
class Config:
    """Run-time configuration of offload (see the module docstring for the variables)."""

    cache_dir: Path = field(default_factory=default_cache_dir)
    """Where compiled kernels are cached on disk (used only if owned by the user and not
    writable by group or others: ``offload.ptx.cache``)."""
    memory: str = "unified"
    """GPU memory mode: ``unified`` (NumPy results over managed memory) or ``device``."""
    bounds_check: bool = False
    """Check captured-array reads; an out-of-bounds read raises ``IndexError``."""
    fastmath: bool = False
    """Allow value-changing float rewrites (reassociation, ``x*0 -> 0``)."""
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
    """Run ``compute_g`` under numba's CUDA simulator (default: ``NUMBA_ENABLE_CUDASIM``).
    Setting it before ``numba.cuda`` is first imported is enough (``offload.ptx.numba_compat``)."""
    determinism: str = "deterministic"
    """How collectives fix their reduction trees (docs/collectives.md): ``deterministic``
    (the same bits run to run on a target, the tree fixed by the sizes), ``cross_target``
    (the same bits on every target: every target uses the GPU's tree) or ``fast`` (the
    same trees as ``deterministic`` for folds; on the GPU, the one-pass scan for floats
    and float atomics for ``permute``, whose last bits may change from run to run)."""
    device_memory_limit: int | None = None
    """Bytes of device memory ``compute_g`` may use for captured host arrays and results;
    beyond it the call is streamed in chunks (``offload.stream``). ``None``: the GPU's
    free memory (a call refused with ``MemoryError`` is streamed)."""
    progress: bool | None = None
    """A progress bar for long streamed runs: ``None`` shows it in a terminal after a
    second, ``True`` always, ``False`` never."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Config:
        """The configuration the ``OFFLOAD_*`` variables of ``env`` (default: the process
        environment) give; ``ValueError`` naming a variable whose value is not accepted."""
        e = os.environ if env is None else env
        values: dict[str, Any] = {"cache_dir": default_cache_dir(e)}
        sim = e.get("NUMBA_ENABLE_CUDASIM", "").strip()
        if sim:
            values["gpu_simulator"] = _flag_env("NUMBA_ENABLE_CUDASIM", sim)
        for name, setting in SETTINGS.items():
            text = e.get(setting.env)
            if text is not None and (text.strip() or name == "pipeline"):
                values[name] = setting.parse(setting.env, text)
        if values.get("pipeline") == "":
            values["pipeline"] = None
        return cls(**values)

    def __setattr__(self, name: str, value: Any) -> None:
        setting = SETTINGS.get(name)
        if setting is None:
            raise AttributeError(_unknown(name))
        object.__setattr__(self, name, setting.check(name, value))
        object.__setattr__(self, "_options", None)

    def __getattr__(self, name: str) -> Any:
        # Only reached for names the instance lacks: a typo when reading, as when setting.
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(_unknown(name))

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


def _unknown(name: str) -> str:
    near = difflib.get_close_matches(name, SETTINGS, n=1)
    guess = f"; did you mean {near[0]!r}?" if near else ""
    return f"ol.config has no setting {name!r}{guess} (the settings are: {', '.join(SETTINGS)})"


config = Config.from_env()
"""The process-wide configuration (``ol.config``)."""
