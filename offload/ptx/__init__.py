"""GPU backend: IR -> numba.cuda kernel source -> PTX; load, launch, kernel cache."""
