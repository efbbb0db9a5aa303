"""Everything the subset allows passes every analysis with no diagnostic."""
# ruff: noqa: PLR1714, SIM102, E731

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from offload.analysis.check import check_function
from offload.frontend.source import get_source
from tests.corpus.valid import PROGRAMS, Program

pytestmark = pytest.mark.unit

GRID = np.arange(12.0).reshape(3, 4)
FLAGS = np.zeros(5, dtype=bool)
SCALE = 2.5
OFFSET = np.float32(0.5)


def _clamp(x: Any, lo: Any, hi: Any) -> Any:
    """Helpers may have docstrings too."""
    return lo if x < lo else (hi if x > hi else x)


_twice = lambda x: 2 * x


def every_construct(i: int, j: int) -> Any:
    """A docstring is not an allocation."""
    t = (i, j, 1.5)
    a, b, c = t
    first = t[0] + t[-1]
    x = a + b - c * 2 / 3 // 1 % 7**2
    y = (i & 3) | (j ^ 1) << 2 >> 1
    z = -x + +y - ~i
    ok = not (0 <= i < 3 <= j + 3) and (i == j or i != j)
    w = 1.0 if ok else 0.0
    if i > 2:
        w += 1
    elif i > 1:
        w -= 1.0
    else:
        pass
    total = 0
    for k in range(j):
        if k == 1:
            continue
        if k > 5:
            break
        total += k
    for k in range(0, 10, 2):
        total *= 1
    n = 0
    while n < 3:
        n += 1
    x
    q, r = divmod(i + 7, 3)
    m = min(i, j) + max(i, j, 2) + abs(x) + int(w) + float(i) + bool(j) + round(w) + pow(i, 2)
    g = GRID[i % 3, j] + GRID.shape[1] + len(GRID) + GRID.ndim + FLAGS[i]
    f = math.sqrt(abs(g)) + math.pi + np.sqrt(OFFSET) + np.float32(SCALE) + np.pi
    h = _clamp(g, 0.0, hi=5.0) + _twice(f) + np.where(g > 0, g, -g) + math.floor(x)
    return first + z + total + q + r + m + h, ok


@pytest.mark.parametrize("program", PROGRAMS, ids=repr)
def test_valid_corpus_program_has_no_diagnostics(program: Program) -> None:
    diags = check_function(get_source(program.fn))
    assert diags == [], "\n".join(d.render() for d in diags)


def test_function_using_every_allowed_construct_has_no_diagnostics() -> None:
    diags = check_function(get_source(every_construct))
    assert diags == [], "\n".join(d.render() for d in diags)


def test_lambda_element_function_in_the_subset_has_no_diagnostics() -> None:
    fn = lambda i: GRID[i, 0] * SCALE if i > 0 else _clamp(i, 0, 1)
    assert check_function(get_source(fn)) == []


def test_closure_over_local_scalar_and_array_has_no_diagnostics() -> None:
    table = np.ones((2, 2))
    k = 3

    def element(i: int, j: int) -> Any:
        return table[i, j] * k

    assert check_function(get_source(element)) == []
