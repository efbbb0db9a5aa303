"""The ``early_loads`` pass: golden IR (loads and their index computations move to the
front of their block, shared-memory-dependent ones stay), and interpreter results identical
before and after on random programs."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from hypothesis import given, settings

from offload.frontend.lower import fetch_captures
from offload.ir.core import Function
from offload.ir.interp import compute
from offload.ir.ops import TILE_OPS
from offload.ir.parser import parse_function
from offload.ir.printer import print_function
from offload.ir.verifier import verify
from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.passes.early_loads import EarlyLoads
from offload.ptx.passes.stage import StageTiles
from tests.corpus.staged import CASES, StagedCase
from tests.opt.golden import filecheck
from tests.strategies.programs import programs, same_results

pytestmark = pytest.mark.unit

# price-like: a division, then a load whose index is computed after it
LATE_LOAD = """\
func @f(index %i.0: i64, capture "a" %a.1: array<f32,1>, capture "b" %b.2: array<f32,1>) -> (f32) {
^entry.0:
  %3 = load %a.1, %i.0 : f32
  %4 = const 3.0 : f32
  %5 = truediv %3, %4 : f32
  %6 = const 1 : i64
  %7 = add %i.0, %6 : i64
  %8 = load %b.2, %7 : f32
  %9 = mul %5, %8 : f32
  return %9
}
"""


def _run(text: str) -> tuple[Function, Function]:
    fn = parse_function(textwrap.dedent(text))
    verify(fn)
    before = print_function(fn)
    out = EarlyLoads().run(fn)
    verify(out)
    assert print_function(fn) == before, "the pass mutated the IR it was handed"
    return fn, out


def test_a_late_load_and_its_index_move_before_the_arithmetic() -> None:
    _, out = _run(LATE_LOAD)
    filecheck(
        print_function(out),
        """\
        CHECK: ^entry.0:
        CHECK-NEXT: load %a.1, %i.0
        CHECK-NEXT: const 1 : i64
        CHECK-NEXT: add %i.0,
        CHECK-NEXT: load %b.2,
        CHECK-NEXT: const 3.0 : f32
        CHECK-NEXT: truediv
        CHECK-NEXT: mul
        CHECK-NEXT: return
        """,
    )


def test_loads_keep_their_order_among_themselves() -> None:
    _, out = _run(LATE_LOAD)
    text = print_function(out)
    assert text.index("load %a.1") < text.index("load %b.2")


def test_an_index_through_a_division_moves_with_its_load() -> None:
    # b[int(a[i] / 3.0)]: the division feeds the index, so it moves with the load.
    text = LATE_LOAD.replace(
        "  %6 = const 1 : i64\n  %7 = add %i.0, %6 : i64\n", "  %7 = cast %5 : i64\n"
    )
    _, out = _run(text)
    printed = print_function(out)
    body = printed[printed.index("^entry.0:") :].splitlines()[1:]
    ops = [line.split("=")[1].split()[0] for line in body if "=" in line]
    assert ops == ["load", "const", "truediv", "cast", "load", "mul"], printed


@settings(max_examples=60, deadline=None)
@given(program=programs())
def test_random_programs_keep_their_interpreter_results(program: tuple[Any, ...]) -> None:
    fn, shape, captures = program
    verify(fn)
    out = EarlyLoads().run(fn)
    verify(out)
    try:
        expected: Any = compute(fn, shape, captures)
    except IndexError:
        with pytest.raises(IndexError):  # a faulting read faults still (maybe another one)
            compute(out, shape, captures)
        return
    assert same_results(expected, compute(out, shape, captures)), print_function(out)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_staged_kernels_keep_their_shared_memory_order_and_values(case: StagedCase) -> None:
    ir = run_pipeline(check_and_lower(case.fn, 2).ir, CompileOptions(verify=True))
    staged = StageTiles(tile=4).run(ir)
    out = EarlyLoads().run(staged)
    verify(out)

    def tile_ops(fn: Function) -> list[list[str]]:
        return [[op.opcode.value for op in b.ops if op.opcode in TILE_OPS] for b in fn.blocks]

    assert tile_ops(out) == tile_ops(staged)
    caps = fetch_captures(case.fn, check_and_lower(case.fn, 2))
    assert same_results(compute(staged, case.shape, caps), compute(out, case.shape, caps))
