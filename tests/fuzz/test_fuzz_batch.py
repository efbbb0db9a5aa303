"""A fixed-seed batch of the differential fuzzer (``tests/fuzz``): generated element
functions, written as source files, agree with CPython on the interpreter, ``compute_s``,
``compute_p`` and (sim lane) ``compute_g``; no target crashes or reports an internal error.
``tools/fuzz.py`` runs the long campaign; seeds here are ones every target passes today
(a seed that starts failing is a regression to look at, not noise: generation is
deterministic)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.gen import generate
from tests.fuzz.run import run_program, same

INTERP_SEEDS = range(20)
NUMBA_SEEDS = (1000, 1001, 1003)
SIM_SEEDS = (1000, 1004)
LIBRARY_SEEDS = range(2000, 2012)
"""Seeds of the generator's library mode (``generate(seed, library=True)``: rounding to
decimals, ``np.isclose``, ``np.finfo``, ``np.var``/``np.std``, tuples indexed at run time)."""
FIXED_FINDINGS = {  # campaign seeds that were findings, with the side that was wrong
    50124: "interp: np.float32(2.2e-308) is 0.0, so falsy; its truth was taken from float64",
    50216: "interp: the truth of a float32 constant was folded from its float64 value",
    50579: "interp: bool(np.float32(-5e-324)) is False (the constant rounds to -0.0)",
    50663: "fold: float inf // 1.0 is NaN (x // 1.0 is floor(x)), was folded to x",
    90039: "fold: x - (-128) on int8 made the constant 128, not wrapped to -128",
    90480: "ranges: nested short-circuit tests narrowed exponentially often (minutes)",
}


def _check(seed: int, tmp_path: Path, targets: tuple[str, ...], *, library: bool = False) -> None:
    out = run_program(generate(seed, library=library), tmp_path, targets)
    assert not out.findings, (out.path, out.findings)


@pytest.mark.unit
def test_fuzz_generator_is_deterministic() -> None:
    assert generate(7).source == generate(7).source
    assert generate(7).source != generate(8).source


@pytest.mark.unit
def test_fuzz_comparison_tells_signed_zero_and_nan_apart() -> None:
    import numpy as np

    assert same(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))
    assert not same(np.array([0.0]), np.array([-0.0]))
    assert not same(np.array([1], np.int64), np.array([1], np.int32))


@pytest.mark.unit
@pytest.mark.parametrize("seed", INTERP_SEEDS)
def test_fuzz_program_agrees_with_cpython_on_interpreter(seed: int, tmp_path: Path) -> None:
    _check(seed, tmp_path, ("interp",))


@pytest.mark.unit
@pytest.mark.parametrize("seed", LIBRARY_SEEDS)
def test_fuzz_library_program_agrees_with_cpython_on_interpreter(seed: int, tmp_path: Path) -> None:
    _check(seed, tmp_path, ("interp",), library=True)


@pytest.mark.unit
def test_fuzz_library_mode_leaves_the_default_programs_as_they_were() -> None:
    assert generate(90480, library=False).source == generate(90480).source
    assert generate(2002, library=True).source != generate(2002).source


@pytest.mark.unit
@pytest.mark.parametrize("seed", sorted(FIXED_FINDINGS))
def test_fuzz_finding_stays_fixed_on_interpreter(seed: int, tmp_path: Path) -> None:
    _check(seed, tmp_path, ("interp",))


@pytest.mark.cpu
def test_float_floor_division_by_one_is_floor_on_cpu_targets(tmp_path: Path) -> None:
    _check(50663, tmp_path, ("compute_s",))


@pytest.mark.cpu
@pytest.mark.parametrize("seed", NUMBA_SEEDS)
def test_fuzz_program_agrees_with_cpython_on_cpu_targets(seed: int, tmp_path: Path) -> None:
    _check(seed, tmp_path, ("compute_s", "compute_p"))


@pytest.mark.cpu
def test_fuzz_library_program_agrees_with_cpython_on_cpu_targets(tmp_path: Path) -> None:
    _check(2003, tmp_path, ("compute_s", "compute_p"), library=True)  # (isclose, finfo, ...)


@pytest.mark.sim
@pytest.mark.parametrize("seed", SIM_SEEDS)
def test_fuzz_program_agrees_with_cpython_on_simulator(seed: int, tmp_path: Path) -> None:
    _check(seed, tmp_path, ("compute_g",))
