"""``div``/``rem`` marked ``{nonneg = true}`` by the divmod pass are emitted as unsigned
divisions (emit/ops.py); compiled for cpu-seq they still give the IR interpreter's results
on every pair of non-negative edge values, a zero divisor (0) and the type's maximum
included. The attribute is a proven fact, never a change of meaning."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from offload.cpu import CPU_SEQ
from offload.ir.interp import compute
from offload.ir.parser import parse_function
from offload.ir.types import I8, I16, I32, I64, ScalarType
from offload.options import CompileOptions

pytestmark = pytest.mark.cpu


def _function(t: ScalarType) -> str:
    return (
        f'func @nonneg_{t}(index %i.0: i64, capture "x" %x.1: array<{t},1>, '
        f'capture "y" %y.2: array<{t},1>) -> ({t}, {t}) {{\n^entry.0:\n'
        f"  %a = load %x.1, %i.0 : {t}\n  %b = load %y.2, %i.0 : {t}\n"
        f"  %q = div %a, %b {{nonneg = true}} : {t}\n"
        f"  %r = rem %a, %b {{nonneg = true}} : {t}\n"
        "  return %q, %r\n}\n"
    )


@pytest.mark.parametrize("t", [I8, I16, I32, I64], ids=str)
def test_unsigned_emission_of_nonneg_division_matches_the_interpreter(t: ScalarType) -> None:
    top = int(np.iinfo(t.dtype).max)
    edges = [0, 1, 2, 3, 7, 100 % top, top // 2, top - 1, top]
    xs, ys = (np.array(v, dtype=t.dtype) for v in zip(*itertools.product(edges, edges)))
    fn = parse_function(_function(t))
    want = compute(fn, xs.shape, [xs, ys])
    kernel = CPU_SEQ.compile(fn, CompileOptions())
    source = CPU_SEQ.source(fn, CompileOptions())
    assert f"// np.uint{t.bits}(" in source and f"% np.uint{t.bits}(" in source, source
    got = CPU_SEQ.allocate(xs.shape, [r.dtype for r in fn.result_types])
    kernel.launch(xs.shape, got, [xs, ys])
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and np.array_equal(g, w), (xs, ys, g, w)


def test_unmarked_signed_division_keeps_the_sign_fix_up() -> None:
    fn = parse_function(_function(I64).replace(" {nonneg = true}", ""))
    source = CPU_SEQ.source(fn, CompileOptions())
    assert "// np.uint" not in source and "% np.uint" not in source, source
