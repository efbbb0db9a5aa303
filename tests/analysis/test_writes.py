"""Write analysis: stores that do not bind a local are reported; local bindings are fine."""
# ruff: noqa: PLW0603, F841

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from offload.analysis.writes import check_writes
from tests.analysis.support import context, summary
from tests.analysis.test_valid_subset import every_construct

pytestmark = pytest.mark.unit

A = np.zeros((3, 3))
CFG = SimpleNamespace(inner=SimpleNamespace(x=1.0))
TOTAL = 0


def test_assignment_unpacking_and_augmented_assignment_of_locals_are_fine() -> None:
    assert summary(check_writes(context(every_construct))) == []


def test_store_into_a_local_tuple_is_still_a_write() -> None:
    def f(i: int) -> Any:
        t = (i, i)
        t[0] = 1
        return t

    assert summary(check_writes(context(f))) == [("write", "t[0]")]


def test_nested_attribute_and_subscript_stores_name_their_root() -> None:
    def f(i: int) -> Any:
        CFG.inner.x = 2.0
        A[i][0] = 1.0
        return i

    diags = check_writes(context(f))
    assert summary(diags) == [("write", "CFG.inner.x"), ("write", "A[i][0]")]
    assert "'x'" in diags[0].message
    assert "'A'" in diags[1].message


def test_global_declaration_reported_once_not_per_assignment() -> None:
    def f(i: int) -> Any:
        global TOTAL
        TOTAL += i
        TOTAL = TOTAL * 2
        return i

    assert summary(check_writes(context(f))) == [("write", "global TOTAL")]
