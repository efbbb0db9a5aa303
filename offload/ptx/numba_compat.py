"""numba-cuda as offload imports it: with the compatibility fix NumPy 2.5 needs.

numba-cuda 0.30 registers an overload for ``np.row_stack`` when it builds its typing tables
(at the first compile), and NumPy 2.5 removed that alias of ``np.vstack``: every compile
then fails with an ``AttributeError``. ``ensure_compatible`` imports the module that
registers it with the alias present for that moment only (the user's NumPy is left as it
was), so ``compute_g`` runs on the NumPy a machine has, 2.0 through 2.5. Anything else that
stops numba-cuda from loading is a ``GPUUnavailable`` naming the versions and what to do.
"""

from __future__ import annotations

import importlib.metadata
import threading
import warnings

import numpy as np

from offload.diagnostics import GPUUnavailable

_LOCK = threading.Lock()
_LOADED = threading.Event()


def ensure_compatible() -> None:
    """Make numba-cuda's typing tables loadable on this NumPy (once per process)."""
    if _LOADED.is_set():
        return
    with _LOCK:
        if _LOADED.is_set():
            return
        missing = not hasattr(np, "row_stack")
        if missing:
            np.row_stack = np.vstack  # type: ignore[attr-defined]
        try:
            from numba import config

            with warnings.catch_warnings():
                # numba-cuda's own import-time deprecations under a newer NumPy (2.5: the
                # generic timedelta unit) are not the user's to see, nor errors under -W.
                warnings.simplefilter("ignore", DeprecationWarning)
                import numba.cuda

                if not getattr(config, "ENABLE_CUDASIM", 0):  # the simulator: no typing tables
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
