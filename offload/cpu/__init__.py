"""CPU backends: compute_s / compute_p through numba (njit / prange)."""
