"""One-off probes and studies behind the suite's numbers (see benchmarks/lab/README.md).

Not part of the suite: ``python -m offload bench`` never imports these modules.
"""
