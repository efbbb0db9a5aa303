"""CPU backends: ``cpu-seq`` (numba njit) and ``cpu-par`` (numba prange)."""

from offload.cpu.backend import CPU_PAR, CPU_SEQ, CpuBackend, CpuKernel, OutOfBoundsRead

__all__ = ["CPU_PAR", "CPU_SEQ", "CpuBackend", "CpuKernel", "OutOfBoundsRead"]
