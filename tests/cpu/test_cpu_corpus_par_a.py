"""The valid-program corpus through cpu-par equals the IR interpreter (even-numbered half;
the corpus is split over two files so that xdist spreads its compiles)."""

from __future__ import annotations

import pytest

from offload.cpu import CPU_PAR
from tests.corpus.valid import PROGRAMS, Program
from tests.cpu.corpus_run import check_program

pytestmark = pytest.mark.cpu


@pytest.mark.parametrize("program", PROGRAMS[::2], ids=repr)
def test_corpus_program_on_cpu_par_matches_interpreter(program: Program) -> None:
    check_program(program, CPU_PAR)
