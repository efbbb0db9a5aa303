"""Every pass, and the default pipeline, keeps the interpreter's results on random programs.

The programs come from ``tests.strategies.programs``; each is run by the IR interpreter
before and after, on every index of its shape, and the results must agree bit for bit
(NaN matches NaN; the sign of zero matters). The verifier runs after every pass.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from offload.ir.interp import compute
from offload.ir.printer import print_function
from offload.ir.verifier import verify
from offload.opt.manager import run_pipeline
from offload.opt.registry import COMMON, DEFAULT_PIPELINE
from offload.options import CompileOptions
from tests.strategies.programs import programs, same_results

pytestmark = pytest.mark.unit


def _check(pipeline: str, program: tuple[object, ...]) -> None:
    fn, shape, captures = program
    verify(fn)  # type: ignore[arg-type]
    before_text = print_function(fn)  # type: ignore[arg-type]
    try:
        expected = compute(fn, shape, captures)  # type: ignore[arg-type]
    except IndexError as err:
        raise AssertionError(f"the generated program reads out of bounds:\n{before_text}") from err
    out = run_pipeline(fn, CompileOptions(pipeline=pipeline, verify=True))  # type: ignore[arg-type]
    assert print_function(fn) == before_text, "the pass mutated the IR it was handed"  # type: ignore[arg-type]
    try:
        got = compute(out, shape, captures)  # type: ignore[arg-type]
    except IndexError as err:
        raise AssertionError(f"{before_text}\n->\n{print_function(out)}") from err
    assert same_results(expected, got), print_function(out)


@pytest.mark.parametrize("name", sorted(COMMON))
@settings(max_examples=25)
@given(program=programs())
def test_pass_preserves_interpreter_results(name: str, program: tuple[object, ...]) -> None:
    _check(name, program)


@settings(max_examples=60)
@given(program=programs())
def test_default_pipeline_preserves_interpreter_results(program: tuple[object, ...]) -> None:
    _check(DEFAULT_PIPELINE, program)


@settings(max_examples=40)
@given(program=programs())
def test_range_facts_contain_every_value_the_interpreter_computes(
    program: tuple[object, ...],
) -> None:
    from offload.analysis.ranges import RangeFacts

    fn, shape, captures = program
    facts = RangeFacts(fn)  # type: ignore[arg-type]
    seen = _trace_values(fn, shape, captures)
    for value, block, observed in seen:
        r = facts.range_of(value, block)
        if r is not None:
            assert r.lo <= int(observed) <= r.hi, (r, observed, print_function(fn))  # type: ignore[arg-type]


def _trace_values(
    fn: object, shape: object, captures: object
) -> list[tuple[object, object, object]]:
    """Every (value, block, observed value) of integer and bool ops over all indices, by
    running probes: copies of ``fn`` whose block defining the value returns
    ``(true, value)`` right after it, while every other return gives ``(false, 0)``."""
    import itertools

    from offload.ir.core import Op, Return, Value
    from offload.ir.interp import evaluate
    from offload.ir.ops import Opcode
    from offload.ir.types import BOOL, ScalarType
    from offload.opt.clone import clone_function

    out: list[tuple[object, object, object]] = []
    targets = []
    for k, block in enumerate(fn.blocks):  # type: ignore[attr-defined]
        for j, op in enumerate(block.ops):
            t = op.result.type
            if isinstance(t, ScalarType) and (t.is_int or t.is_bool):
                targets.append((k, j, op.result, block))
    for k, j, value, block in targets:
        probe = clone_function(fn)  # type: ignore[arg-type]
        t = value.type
        for b in probe.blocks:
            if isinstance(b.terminator, Return):
                f, z = Value(BOOL), Value(t)
                b.ops += [
                    Op(Opcode.CONST, [], f, {"value": False}),
                    Op(Opcode.CONST, [], z, {"value": False if t.is_bool else 0}),
                ]
                b.terminator = Return([f, z])
        blk = probe.blocks[k]
        blk.ops = blk.ops[: j + 1]
        flag = Value(BOOL)
        blk.ops.append(Op(Opcode.CONST, [], flag, {"value": True}))
        blk.terminator = Return([flag, blk.ops[j].result])
        probe.result_types = [BOOL, t]
        for index in itertools.product(*(range(n) for n in shape)):  # type: ignore[attr-defined]
            reached, got = evaluate(probe, index, captures)  # type: ignore[arg-type]
            if reached:
                out.append((value, block, got))
    return out
