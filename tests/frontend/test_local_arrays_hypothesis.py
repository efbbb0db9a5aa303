"""Random straight-line and looped programs over a local array (stores, augmented stores
and loads at constant, negative and computed indices) agree with CPython in the
interpreter, before and after the default pass pipeline."""

from __future__ import annotations

import linecache
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload.frontend.lower import fetch_captures
from offload.ir.interp import compute
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions

pytestmark = pytest.mark.unit

X = np.array([0.5, -1.25, 2.0, 3.5, -0.75, 1.0])


@st.composite
def programs(draw: Any) -> str:
    k = draw(st.integers(1, 6))
    index = st.one_of(
        st.integers(-k, k - 1).map(str),
        st.integers(0, 3).map(lambda c: f"(i + {c}) % {k}"),
        st.integers(1, k).map(lambda c: f"-((i % {c}) + 1)"),
    )
    lines = [f"t = np.{draw(st.sampled_from(['zeros', 'ones']))}({k})", "acc = 0.0"]
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["store", "aug", "load", "loop"]))
        ix = draw(index)
        if kind == "store":
            lines.append(f"t[{ix}] = X[i] * {draw(st.integers(-3, 3))}")
        elif kind == "aug":
            lines.append(f"t[{ix}] += acc + {draw(st.integers(0, 2))}")
        elif kind == "load":
            lines.append(f"acc = acc * 0.5 + t[{ix}]")
        else:
            lines.append(f"for m in range({k}):\n        t[m] = t[m] + t[{ix}] * 0.25")
    lines.append("return acc + t[0] + t[-1]")
    return "def fn(i):\n" + "".join(f"    {line}\n" for line in lines)


def _define(text: str) -> Any:
    name = f"<local-array-hypothesis-{len(linecache.cache)}>"
    linecache.cache[name] = (len(text), None, text.splitlines(keepends=True), name)
    ns: dict[str, Any] = {"np": np, "X": X}
    exec(compile(text, name, "exec"), ns)
    return ns["fn"]


@settings(max_examples=40, deadline=None)
@given(programs())
def test_random_local_array_program_matches_cpython(text: str) -> None:
    fn = _define(text)
    want = np.array([fn(i) for i in range(len(X))])
    low = check_and_lower(fn, 1)
    caps = fetch_captures(fn, low)
    (before,) = compute(low.ir, (len(X),), caps)
    optimised = run_pipeline(low.ir, CompileOptions(verify=True))
    (after,) = compute(optimised, (len(X),), caps)
    np.testing.assert_array_equal(before, want, err_msg=text)
    np.testing.assert_array_equal(after, want, err_msg=text)
