"""Skeleton kernels on the CPU stay quiet about numba's performance hints (errors under
``-W error``), which numba gives while it compiles a specialisation -- and only the
compile is wrapped, so a warm launch pays no ``catch_warnings``."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from numba.core.errors import NumbaPerformanceWarning

from offload.acc.skeletons.build import _Quiet

pytestmark = pytest.mark.unit


class FakeDispatcher:
    """numba's dispatcher as ``_Quiet`` sees it: a call compiles through
    ``self._compile_for_args`` for types it has not seen (and warns there)."""

    def __init__(self) -> None:
        self.seen: set[type] = set()

    def _compile_for_args(self, *args: Any) -> Any:
        self.seen.add(type(args[0]))
        warnings.warn("parallel=True had no effect", NumbaPerformanceWarning, stacklevel=1)
        return args[0]

    def __call__(self, *args: Any) -> Any:
        if type(args[0]) not in self.seen:
            return self._compile_for_args(*args)
        return args[0]


def test_compiling_is_quiet_and_a_warm_call_is_not_wrapped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    quiet = _Quiet(FakeDispatcher())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert quiet(1) == 1  # compiles: the warning is swallowed
        assert quiet(2.5) == 2.5  # a new type compiles again, quietly
        calls = []
        monkeypatch.setattr(warnings, "catch_warnings", lambda: calls.append(1))
        assert quiet(3) == 3  # warm: no catch_warnings at all
        assert calls == []
