"""CPU backends: ``cpu-seq`` (numba njit) and ``cpu-par`` (an njit range kernel run on numba's
threads by a ``prange`` driver, ``offload.cpu.parallel``)."""

from offload.cpu.backend import CPU_PAR, CPU_SEQ, CpuBackend
from offload.cpu.kernel import CpuKernel, OutOfBoundsRead

__all__ = ["CPU_PAR", "CPU_SEQ", "CpuBackend", "CpuKernel", "OutOfBoundsRead"]
