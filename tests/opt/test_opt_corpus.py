"""The default pipeline keeps the interpreter's results on every program of the corpus
(tests/corpus/valid.py) lowered by the frontend."""

from __future__ import annotations

import pytest

from offload.frontend.lower import fetch_captures, lower
from offload.ir.interp import compute
from offload.ir.printer import print_function
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from tests.corpus.valid import PROGRAMS, Program
from tests.strategies.programs import same_results

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("program", PROGRAMS, ids=repr)
def test_default_pipeline_keeps_corpus_results(program: Program) -> None:
    lowered = lower(program.fn, len(program.shape))
    captures = fetch_captures(program.fn, lowered)
    expected = compute(lowered.ir, program.shape, captures)
    before = print_function(lowered.ir)
    out = run_pipeline(lowered.ir, CompileOptions(verify=True))
    assert print_function(lowered.ir) == before
    assert same_results(expected, compute(out, program.shape, captures)), print_function(out)
