"""Writes to captured arrays, attributes and variables outside the element function."""
# ruff: noqa: PLW0603

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from offload.diagnostics import WriteNotAllowed
from tests.corpus.invalid._registry import expect

A = np.zeros(16)
B = np.zeros((4, 4))
CFG = SimpleNamespace(scale=1.0)
COUNTER = 0


@expect(WriteNotAllowed, line=22, col=5, caret="A[i]")
def store_into_captured_array(i: int) -> Any:
    A[i] = 1.0
    return i


@expect(WriteNotAllowed, line=28, col=5, caret="B[i, j]")
def augmented_store_into_array(i: int, j: int) -> Any:
    B[i, j] += 1.0
    return B[i, j]


@expect(WriteNotAllowed, line=34, col=5, caret="CFG.scale")
def attribute_assignment(i: int) -> Any:
    CFG.scale = 2.0
    return i * 2.0


@expect(WriteNotAllowed, line=40, col=5, caret="global COUNTER")
def global_declaration(i: int) -> Any:
    global COUNTER
    COUNTER = COUNTER + 1
    return i


def _make_nonlocal() -> Any:
    total = 0

    @expect(WriteNotAllowed, line=50, col=9, caret="nonlocal total")
    def nonlocal_declaration(i: int) -> Any:
        nonlocal total
        total += i
        return total

    return nonlocal_declaration


nonlocal_declaration = _make_nonlocal()


@expect(WriteNotAllowed, line=63, col=5, caret="A[i]")
@expect(WriteNotAllowed, line=63, col=11, caret="A[i + 1]")
def tuple_target_with_array_stores(i: int) -> Any:
    A[i], A[i + 1] = 0.0, 1.0
    return i


def _clear(k: int) -> Any:
    A[k] = 0.0
    return k


@expect(
    WriteNotAllowed, line=68, col=5, caret="A[k]", notes=((76, "in '_clear' called from here"),)
)
def write_inside_helper(i: int) -> Any:
    return _clear(i) + 1
