"""The Haskell-gap benchmark suite (FHPC 2014 reproduction) and the Accelerate points.

See benchmarks/README.md and ../shared/benchmarks/SPEC.md. Nothing here is imported by
``offload`` itself; ``python -m offload bench`` calls :func:`benchmarks.runner.main`.
"""
