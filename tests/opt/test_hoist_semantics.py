"""The hoist pass on generated element functions: an index-independent prologue (a loop
over a captured array, a transcendental call of a captured scalar) in front of, behind or
inside index-dependent code. Whatever the pass decides, the optimised function gives the
unoptimised one's bits on the interpreter (the specification), and CPython's values; where
the prologue cannot run for every element (a loop behind an index-dependent branch, a
loop carrying an index-dependent value) nothing is hoisted."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from offload.frontend.lower import fetch_captures
from offload.ir.interp import compute
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.opt.util import natural_loops
from offload.options import CompileOptions

pytestmark = pytest.mark.unit

HEADER = """\
import math
import numpy as np

c = np.linspace(-0.9, 0.9, 7)
a = np.linspace(-2.0, 2.0, 20).reshape(4, 5)
s = 0.3


def f(i, j):
"""


@st.composite
def sources(draw: st.DrawFn) -> tuple[str, bool]:
    """An element function's source and whether its prologue runs for every element."""
    fn = draw(st.sampled_from(["np.tanh", "np.exp", "np.sin", "math.atan", "np.sqrt"]))
    acc = draw(st.sampled_from(["sum", "min", "max"]))
    guard = draw(st.sampled_from(["none", "if", "carried"]))
    use = draw(st.sampled_from(["add", "mul", "branch"]))
    scalar = draw(st.booleans())
    init = {"sum": "0.0", "min": "1e9", "max": "-1e9"}[acc]
    step = {
        "sum": f"t = t + {fn}(c[k] * 0.5 + 1.0)",
        "min": f"t = min(t, {fn}(c[k] * 0.5 + 1.0))",
        "max": f"t = max(t, {fn}(c[k] * 0.5 + 1.0))",
    }[acc]
    lines = ["    x = a[i, j]"]
    if guard == "carried":
        lines.append("    t = x")
    else:
        lines.append(f"    t = {init}")
    body = ["    for k in range(c.shape[0]):", f"        {step}"]
    if guard == "if":
        lines.append("    if x > 0.5:")
        lines.extend("    " + b for b in body)
    else:
        lines.extend(body)
    if scalar:
        lines.append("    t = t + math.exp(s)")
    lines.append(
        {
            "add": "    return x + t",
            "mul": "    return x * t",
            "branch": "    if x > 0:\n        return x - t\n    return t",
        }[use]
    )
    always = guard == "none"
    return HEADER + "\n".join(lines) + "\n", always


def _load(source: str, folder: Path, n: int):
    name = f"hoist_generated_{n}"
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f


_COUNT = iter(range(10**9))


@given(sources())
def test_hoisted_functions_keep_the_unoptimised_bits(tmp_path_factory, generated) -> None:
    source, always = generated
    f = _load(source, tmp_path_factory.mktemp("hoist"), next(_COUNT))
    low = check_and_lower(f, 2)
    caps = fetch_captures(f, low)
    out = run_pipeline(low.ir, CompileOptions(verify=True))
    (want,) = compute(low.ir, (4, 5), caps)
    (got,) = compute(out, (4, 5), caps)
    np.testing.assert_array_equal(got, want, strict=True)
    py = np.array([f(i, j) for i in range(4) for j in range(5)]).reshape(4, 5)
    np.testing.assert_allclose(got, py, rtol=1e-14, atol=1e-14)
    if always:
        assert out.prologue is not None and natural_loops(out.prologue), source
    else:  # the loop stays per element (the scalar's exp may still be hoisted)
        assert out.prologue is None or not natural_loops(out.prologue), source
