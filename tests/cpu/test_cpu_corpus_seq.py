"""The whole valid-program corpus through cpu-seq equals the IR interpreter."""

from __future__ import annotations

import pytest

from offload.cpu import CPU_SEQ
from tests.corpus.valid import PROGRAMS, Program
from tests.cpu.corpus_run import check_program

pytestmark = pytest.mark.cpu


@pytest.mark.parametrize("program", PROGRAMS, ids=repr)
def test_corpus_program_on_cpu_seq_matches_interpreter(program: Program) -> None:
    check_program(program, CPU_SEQ)
