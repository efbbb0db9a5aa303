"""The runner's fresh-process compile time: the report's column, and a probe that fails
(here: no such target) recorded as an error, never fatal to the run."""

from __future__ import annotations

import pytest

from benchmarks import report
from benchmarks.measure import _fresh_process

pytestmark = pytest.mark.unit


def test_the_compile_column_shows_cold_and_fresh_times() -> None:
    assert report._compile({"compile_s": 0.25, "fresh_compile_s": 0.004}) == "250 ms / 4 ms"
    assert report._compile({"compile_s": 0.25}) == "250 ms"


def test_a_failed_probe_is_an_error_entry() -> None:
    got = _fresh_process("smvm", "no-such-target", "tiny", None)
    assert set(got) == {"fresh_compile_error"}
    assert "CalledProcessError" in got["fresh_compile_error"]
