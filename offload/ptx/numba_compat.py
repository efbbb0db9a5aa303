"""numba-cuda as offload imports it: with the compatibility fix NumPy 2.5 needs.

numba-cuda 0.30 registers an overload for ``np.row_stack`` when it builds its typing tables
(at the first compile), and NumPy 2.5 removed that alias of ``np.vstack``: every compile
then fails with an ``AttributeError``. ``ensure_compatible`` imports the module that
registers it with the alias present for that moment only (the user's NumPy is left as it
was), so ``compute_g`` runs on the NumPy a machine has, 2.0 through 2.5. Anything else that
stops numba-cuda from loading is a ``GPUUnavailable`` naming the versions and what to do.

It also picks numba-cuda's mode. numba chooses between the GPU and its CUDA simulator once,
when ``numba.cuda`` is first imported (from ``NUMBA_ENABLE_CUDASIM``, read into numba's
config when numba itself is imported). So that ``ol.config.gpu_simulator`` (or
``OFFLOAD_GPU_SIMULATOR=1``) alone is the switch, before or after ``import offload``,
``ensure_compatible(simulator=True)`` turns the simulator on in numba's configuration (and the
environment, for child processes) before that first import; where ``numba.cuda`` was already
imported for the GPU, nothing can switch it and the error says so.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
import threading
import warnings

import numpy as np

from offload.diagnostics import GPUUnavailable

_LOCK = threading.Lock()
_LOADED = threading.Event()


def ensure_compatible(simulator: bool = False) -> None:
    """Import numba-cuda (once per process): as the CUDA simulator if ``simulator`` and
    ``numba.cuda`` is not imported yet, with its typing tables made loadable on this NumPy.
    ``GPUUnavailable`` where the simulator is asked for but numba.cuda runs the GPU."""
    if not _LOADED.is_set():
        with _LOCK:
            if not _LOADED.is_set():
                _load(simulator)
    if simulator and not simulator_loaded():
        raise GPUUnavailable.at(
            "ol.config.gpu_simulator is on, but numba.cuda was already imported in this "
            "process for a real GPU; numba picks the simulator only when numba.cuda is first "
            "imported",
            None,
            hint="set OFFLOAD_GPU_SIMULATOR=1 in the environment, or ol.config.gpu_simulator = "
            "True before anything imports numba.cuda",
        )


def simulator_loaded() -> bool:
    """Whether ``numba.cuda`` is imported as numba's CUDA simulator."""
    return "numba.cuda.simulator_init" in sys.modules


def _select_simulator() -> None:
    """Make numba's first import of ``numba.cuda`` load the simulator."""
    if "numba.cuda" in sys.modules:
        return  # too late: ensure_compatible reports it
    from numba.core import config

    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    config.reload_config()  # type: ignore[no-untyped-call]


def _load(simulator: bool) -> None:
    if simulator:
        _select_simulator()
    missing = not hasattr(np, "row_stack")
    if missing:
        np.row_stack = np.vstack  # type: ignore[attr-defined]
    try:
        with warnings.catch_warnings():
            # numba-cuda's own import-time deprecations under a newer NumPy (2.5: the
            # generic timedelta unit) are not the user's to see, nor errors under -W.
            warnings.simplefilter("ignore", DeprecationWarning)
            import numba.cuda

            if not simulator_loaded():  # the simulator has no typing tables
                import numba.cuda.np.arrayobj  # noqa: F401  (registers the overloads)
    except Exception as err:
        raise GPUUnavailable.at(
            f"numba-cuda {_version('numba-cuda')} could not be loaded with numpy "
            f"{np.__version__} and numba {_version('numba')}: {type(err).__name__}: {err}",
            None,
            hint='install the GPU extra\'s versions: pip install "offload[gpu]" '
            "(numba-cuda[cu13] >= 0.30 with numba >= 0.60)",
        ) from err
    finally:
        if missing:
            del np.row_stack  # type: ignore[attr-defined]
    _LOADED.set()


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"
