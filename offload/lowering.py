"""Restriction checks, then lowering: what the driver compiles a target with.

    lowered = check_and_lower(fn_or_delayed, rank)   # Lowered, or OffloadError with all
                                                     # the restriction violations at once

The restriction checks (``analysis.check.check_function``) run over a plain element function
and over every element function held in a delayed-array tree (a ``traverse`` function's
getter parameter is callable), so that the frontend only lowers programs already in the
language subset and never reports those restrictions itself.
"""

from __future__ import annotations

import contextlib
import types
from typing import Any

from offload.analysis.check import check_function, raise_diagnostics, sort_diagnostics
from offload.diagnostics import Diagnostic
from offload.frontend.captures import capture_type_key
from offload.frontend.lower import Lowered, lower
from offload.frontend.nodes import ArrayNode, walk_functions
from offload.frontend.reader import Fetcher
from offload.frontend.source import get_source


def check_and_lower(target: Any, rank: int) -> Lowered:
    """Every restriction violation of ``target`` raised together, else its lowering."""
    raise_diagnostics(check_target(target))
    return lower(target, rank)


MAX_TYPINGS = 16
"""Lowerings a ``Typings`` keeps (one per capture-type key; the oldest goes first)."""


class Typings:
    """A target's lowerings by the types of its captured values: a captured value's type
    decides its result types (``x[i] * 2`` is int64 over int64, float64 over float64), so
    what a call computes and checks (``out=``'s dtype, a streamed result's bytes, the
    kernel) comes from the lowering typed for *its* values, not the first call's."""

    def __init__(self, first: Lowered, target: Any, fetch: Fetcher) -> None:
        self.by_key: dict[tuple[Any, ...], Lowered] = {}
        # The values the first lowering was typed for, read right after it (unreadable
        # now: every call lowers again).
        with contextlib.suppress(Exception):
            self.by_key[capture_type_key(fetch(target))] = first

    def of(self, target: Any, rank: int, values: Any) -> Lowered:
        """The lowering of ``target`` typed for ``values`` (lowered on a miss)."""
        key = capture_type_key(values)
        got = self.by_key.get(key)
        if got is None:
            got = check_and_lower(target, rank)
            if len(self.by_key) >= MAX_TYPINGS:
                self.by_key.pop(next(iter(self.by_key)))
            self.by_key[key] = got
        return got


def check_target(target: object) -> list[Diagnostic]:
    """The restriction violations of an element function or of the functions of a
    delayed-array tree, in reading order. Anything that is not a plain function is left
    to ``lower`` (it reports the source as unavailable)."""
    if isinstance(target, ArrayNode):
        diags: list[Diagnostic] = []
        for f in walk_functions(target):
            if isinstance(f.fn, types.FunctionType):
                src = get_source(f.fn)
                diags.extend(check_function(src, callable_params=f.callable_params))
        return sort_diagnostics(diags)
    if isinstance(target, types.FunctionType):
        return check_function(get_source(target))
    return []
