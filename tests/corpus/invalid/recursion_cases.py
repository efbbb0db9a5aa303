"""Recursion, direct and mutual, through helpers and lambda-held helpers."""
# ruff: noqa: E731

from __future__ import annotations

from typing import Any

from offload.diagnostics import RecursionNotAllowed
from tests.corpus.invalid._registry import expect


def fib(n: int) -> Any:
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


@expect(
    RecursionNotAllowed,
    line=15,
    col=12,
    caret="fib(n - 1)",
    notes=((12, "'fib' is defined here"), (26, "in 'fib' called from here")),
)
def calls_recursive_helper(i: int) -> Any:
    return fib(i)


@expect(RecursionNotAllowed, line=31, col=29, caret="element_calls_itself(i - 1)")
def element_calls_itself(i: int) -> Any:
    return 0 if i <= 0 else element_calls_itself(i - 1) + 1


def is_even(n: int) -> Any:
    return True if n == 0 else is_odd(n - 1)


def is_odd(n: int) -> Any:
    return False if n == 0 else is_even(n - 1)


@expect(
    RecursionNotAllowed,
    line=39,
    col=33,
    caret="is_even(n - 1)",
    notes=(
        (34, "'is_even' is defined here"),
        (35, "in 'is_odd' called from here"),
        (54, "in 'is_even' called from here"),
    ),
)
def mutual_recursion(i: int) -> Any:
    return is_even(i)


fact = lambda n: 1 if n <= 1 else n * fact(n - 1)


@expect(
    RecursionNotAllowed,
    line=57,
    col=39,
    caret="fact(n - 1)",
    notes=((57, "'fact' is defined here"), (68, "in 'fact' called from here")),
)
def recursion_through_lambda_helper(i: int) -> Any:
    return fact(i % 5)


def ring_a(n: int) -> Any:
    return 0 if n <= 0 else ring_b(n - 1)


def ring_b(n: int) -> Any:
    return ring_c(n) + 1


def ring_c(n: int) -> Any:
    return ring_a(n - 1) * 2


@expect(
    RecursionNotAllowed,
    line=80,
    col=12,
    caret="ring_a(n - 1)",
    notes=(
        (71, "'ring_a' is defined here"),
        (76, "in 'ring_c' called from here"),
        (72, "in 'ring_b' called from here"),
        (96, "in 'ring_a' called from here"),
    ),
)
def three_function_cycle(i: int) -> Any:
    return ring_a(i)


def gcd_helper(a: int, b: int) -> Any:
    return a if b == 0 else gcd_helper(b, a % b)


def uses_gcd(x: int) -> Any:
    return gcd_helper(x, 12) + 1


@expect(
    RecursionNotAllowed,
    line=100,
    col=29,
    caret="gcd_helper(b, a % b)",
    notes=(
        (99, "'gcd_helper' is defined here"),
        (104, "in 'gcd_helper' called from here"),
        (119, "in 'uses_gcd' called from here"),
    ),
)
def recursion_two_helpers_deep(i: int) -> Any:
    return uses_gcd(i) * 2
