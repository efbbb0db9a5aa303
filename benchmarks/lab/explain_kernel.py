"""The GPU kernel a suite benchmark runs at a size, as ``ol.explain`` shows it (GPU machine).

    python3 -m benchmarks.lab.explain_kernel NAME [--size quick] [--lines 60]

Binds the benchmark, catches the first ``compute_g`` call its run makes (shape and element
function), and prints the tail of ``ol.explain(fn, shape, target="gpu")``: the kernel
variant, registers, occupancy and launch configuration.
"""

from __future__ import annotations

import argparse
import contextlib
import io
from typing import Any


class _Caught(Exception):
    pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name")
    ap.add_argument("--size", default="quick")
    ap.add_argument("--lines", type=int, default=60)
    args = ap.parse_args()

    import offload as ol
    from benchmarks.suite import ALL

    bench = ALL[args.name]
    inputs = bench.make_inputs(bench.sizes[args.size])
    seen: dict[str, Any] = {}

    def catch(shape: Any, fn: Any = None, **_: Any) -> Any:
        seen["shape"], seen["fn"] = shape, fn
        raise _Caught

    with contextlib.suppress(_Caught):
        bench.bind(inputs).run(catch)
    buf = io.StringIO()
    ol.explain(seen["fn"], seen["shape"], target="gpu", file=buf)
    lines = buf.getvalue().splitlines()
    print(f"== {args.name} ({args.size}): shape {seen['shape']}")
    print("\n".join(lines[-args.lines :]))


if __name__ == "__main__":
    main()
