"""volume-rendering written as two element functions per iteration (colour, then the next
ray lengths: two launches) against the suite's one function with two results (one launch),
in one process: ``python -m benchmarks.lab.probe_volrender [--two] RUNNER-ARGS``.

``--two`` swaps the benchmark's ``bind`` for the two-function version (the suite's before
run 9) and then runs ``benchmarks.runner`` with the remaining arguments."""

from __future__ import annotations

import sys
from typing import Any

from benchmarks.suite import volrender
from benchmarks.suite.common import Bound, Compute, Outputs


def two_launch_bind(self: Any, inputs: dict[str, Any]) -> Bound:
    params = inputs["params"]
    visible, opacity = inputs["visible"], inputs["opacity"]
    lengths = inputs["ray0"]

    def colour(i: int) -> Any:
        c = volrender.np.float32(0.0)
        alpha = volrender.np.float32(0.0)
        v = i
        while v < i + lengths[i]:
            o = opacity[v]
            if visible[v] != 0 and o != 0:
                c_next = c + (o + 1.0) * (1.0 - alpha)
                alpha_next = alpha + o * (1.0 - alpha)
                if alpha_next > 0:
                    return c_next
                c = c_next
                alpha = alpha_next
            v += 1
        return c

    def advance(i: int) -> Any:
        return (lengths[i] + 1) % volrender.MAX_LEN

    def set_lengths(a: Any) -> None:
        nonlocal lengths
        lengths = a

    bufs: list[Any] = []
    res: list[Any] = []

    def run(compute: Compute) -> Outputs:
        shape = (params.n,)
        set_lengths(inputs["ray0"])
        for it in range(params.iters):
            if res:
                compute(shape, colour, out=res[0])
            else:
                res.append(compute(shape, colour))
            if it < params.iters - 1:
                slot = it % 2
                if len(bufs) > slot:
                    compute(shape, advance, out=bufs[slot])
                else:
                    bufs.append(compute(shape, advance))
                set_lengths(bufs[slot])
        return (res[0],)

    return Bound(run=run)


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--two" in args:
        args.remove("--two")
        volrender.VolumeRendering.bind = two_launch_bind  # type: ignore[method-assign]
    from benchmarks.runner import main

    sys.exit(main(["volume-rendering", *args]))
