"""The three ``compute_*`` targets as the runner sees them (offload imported lazily)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

_FUNCTIONS = {
    "s": "compute_s",
    "p": "compute_p",
    "g": "compute_g",
    "gd": "compute_g",
    "gdf": "compute_g",
}


@dataclass(frozen=True)
class Target:
    """A ``compute`` callable plus how to make inputs resident for it."""

    key: str
    """``s``, ``p``, ``g`` (unified memory), ``gd`` (device memory) or ``gdf`` (device
    memory and fastmath)."""
    label: str
    on_gpu: bool
    memory: str | None = None
    """``ol.config.memory`` while this target runs (``None``: leave it as it is)."""
    fastmath: bool | None = None
    """``ol.config.fastmath`` while this target runs (``None``: leave it as it is)."""

    @contextmanager
    def configured(self) -> Iterator[None]:
        """Run with this target's memory mode (set once for the whole measurement, so the
        warm path's options stay the same object between calls)."""
        if self.memory is None and self.fastmath is None:
            yield
            return
        import offload as ol

        saved = ol.config.memory, ol.config.fastmath
        if self.memory is not None:
            ol.config.memory = self.memory
        if self.fastmath is not None:
            ol.config.fastmath = self.fastmath
        try:
            yield
        finally:
            ol.config.memory, ol.config.fastmath = saved

    def compute(self) -> Callable[..., Any]:
        if self.key == "py":
            from benchmarks.suite.common import python_compute

            return python_compute
        import offload as ol

        return getattr(ol, _FUNCTIONS[self.key])  # type: ignore[no-any-return]

    def available(self) -> str | None:
        """``None`` if usable, else why not."""
        if self.key == "py":
            return None
        try:
            import offload as ol
        except ImportError as err:
            return f"offload does not import: {err}"
        name = _FUNCTIONS[self.key]
        if not hasattr(ol, name):
            return f"offload.{name} does not exist yet"
        if self.on_gpu:
            try:
                import cupy

                cupy.cuda.runtime.getDeviceCount()
            except Exception as err:
                return f"no GPU: {type(err).__name__}: {err}"
        return None

    def resident(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Inputs as the timed region should see them: on the GPU, arrays are made
        device-resident (``ol.use`` freezes a host array so its device copy is cached, or
        a CuPy array in ``device`` memory mode), so that kernel time excludes copies."""
        if not self.on_gpu:
            return dict(inputs)
        import offload as ol

        use = getattr(ol, "use", None)
        out: dict[str, Any] = {}
        for k, value in inputs.items():
            out[k] = value
            if not (isinstance(value, np.ndarray) and value.ndim > 0):
                continue
            if use is not None:
                frozen = value.copy()
                marked = use(frozen)
                out[k] = marked if marked is not None else frozen
            else:
                import cupy

                out[k] = cupy.asarray(value)
        return out


TARGETS = {
    "s": Target("s", "compute_s", on_gpu=False),
    "p": Target("p", "compute_p", on_gpu=False),
    "g": Target("g", "compute_g", on_gpu=True),
    # Device memory: CuPy results and asynchronous launches, as the GPU peers run; the
    # default unified mode synchronises after every call so its NumPy result is readable.
    "gd": Target("gd", "compute_g[device]", on_gpu=True, memory="device"),
    # The same with OFFLOAD_FASTMATH: approximate division, square roots and reciprocal
    # square roots, contracted multiply-adds -- what the CUDA peers' rsqrtf/__fdividef do.
    "gdf": Target("gdf", "compute_g[device,fastmath]", on_gpu=True, memory="device", fastmath=True),
    "py": Target("py", "cpython", on_gpu=False),
}
