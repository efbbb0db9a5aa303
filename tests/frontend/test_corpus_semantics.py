"""Every valid corpus program: the lowered IR verifies, prints/parses back to the same
text, and the IR interpreter computes what CPython computes."""

from __future__ import annotations

import pytest

from offload.frontend.lower import fetch_captures, lower
from offload.ir.interp import compute
from offload.ir.parser import parse_function
from offload.ir.printer import print_function
from offload.ir.verifier import verify
from tests.corpus.valid import PROGRAMS, Program, assert_results_match

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("program", PROGRAMS, ids=repr)
def test_lowered_program_matches_cpython_in_the_interpreter(program: Program) -> None:
    lowered = lower(program.fn, len(program.shape))
    verify(lowered.ir)
    got = compute(lowered.ir, program.shape, fetch_captures(program.fn, lowered))
    assert_results_match(program, got)


@pytest.mark.parametrize("program", PROGRAMS, ids=repr)
def test_lowered_program_text_parses_back_identically(program: Program) -> None:
    text = print_function(lower(program.fn, len(program.shape)).ir)
    assert print_function(parse_function(text)) == text


@pytest.mark.parametrize("program", PROGRAMS, ids=repr)
def test_every_op_carries_a_source_span(program: Program) -> None:
    ir = lower(program.fn, len(program.shape)).ir
    missing = [op.opcode for op in ir.ops() if op.span is None]
    assert not missing


def test_corpus_has_at_least_forty_programs_of_every_rank() -> None:
    assert len(PROGRAMS) >= 40
    assert {len(p.shape) for p in PROGRAMS} >= {0, 1, 2, 3, 4}
    assert all(1 <= max(1, _size(p.shape)) <= 64 for p in PROGRAMS)


def _size(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
