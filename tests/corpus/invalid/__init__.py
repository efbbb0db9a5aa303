"""The invalid corpus: element functions that break one or more rules of DESIGN §2, each
with the diagnostics it must produce (see ``_registry.expect``)."""

from tests.corpus.invalid import (
    allocation_cases,
    call_cases,
    mixed_cases,
    recursion_cases,
    syntax_cases,
    write_cases,
)
from tests.corpus.invalid._registry import CASES, Case, Expected, expect

MODULES = (allocation_cases, call_cases, mixed_cases, recursion_cases, syntax_cases, write_cases)

__all__ = ["CASES", "MODULES", "Case", "Expected", "expect"]
