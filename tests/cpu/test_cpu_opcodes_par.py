"""Every opcode, per dtype family, through cpu-par equals the IR interpreter.

See tests/cpu/opfuncs.py: one function per dtype applies every op to every pair of edge
values; ints and bools must match exactly, float arithmetic bit for bit, libm within 2 ulp.
"""

from __future__ import annotations

import pytest

from offload.cpu import CPU_PAR
from offload.ir.types import ScalarType
from tests.cpu.opfuncs import TYPES, check_against_interpreter, function_for

pytestmark = pytest.mark.cpu


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_every_opcode_matches_interpreter_on_edge_values(t: ScalarType) -> None:
    fn, names = function_for(t)
    check_against_interpreter(fn, names, t, CPU_PAR)
