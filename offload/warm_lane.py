"""The driver's warm lane: an element function's last specialisation, found by the identity
of its code object alone.

``LANES`` maps ``id(code)`` to a ``Memo``: the kernel, result dtypes and generated capture
reader of the last call, plus what the next call must match to reuse them without a
lookup (backend, options, globals, rank and the kind of ``dtype=``/``out=`` argument).
``offload.driver.run`` checks a memo; ``offload.driver._run`` makes one.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from offload.backend import Backend, Kernel
from offload.frontend.reader import Reader
from offload.ir.core import Function
from offload.ir.types import ArrayType
from offload.options import CompileOptions


@dataclass
class Compiled:
    """One specialisation: optimised IR and its kernel for one backend."""

    ir: Function
    kernel: Kernel
    dtypes: tuple[np.dtype[Any], ...]
    arrays: tuple[int, ...] = field(init=False)
    """Positions of the captured arrays (an ``out=`` must not overlap them)."""
    launchers: dict[tuple[type, ...], Launch] = field(init=False, default_factory=dict)
    """The launch function for captured values of these exact types (``launcher``)."""

    def __post_init__(self) -> None:
        # The user's captures: a hoisted value's capture (``Function.prologue``) is the
        # kernel's own.
        caps = self.ir.captures[: len(self.ir.captures) - self.ir.hoisted]
        self.arrays = tuple(k for k, c in enumerate(caps) if isinstance(c.type, ArrayType))


class Memo:
    """An entry's last specialisation and what selects it on a warm call without a lookup.

    Immutable once made (a new call style makes a new one), so that a concurrent caller
    sees either the old or the new memo whole."""

    __slots__ = (
        "arrays",
        "backend",
        "code",
        "compiled",
        "dtype_arg",
        "dtypes",
        "globals",
        "kernel",
        "launch",
        "options",
        "others",
        "out_type",
        "out_types",
        "rank",
        "read",
        "single",
        "want",
    )

    def __init__(  # noqa: PLR0917  (built in one place, from the call's state)
        self,
        backend: Backend,
        target: Any,
        rank: int,
        options: CompileOptions,
        want: tuple[np.dtype[Any], ...] | None,
        compiled: Compiled,
        read: Reader,
        dtype: Any,
        out: Any,
        values: Sequence[Any],
    ) -> None:
        function = type(target) is types.FunctionType
        self.backend = backend
        self.code: types.CodeType | None = target.__code__ if function else None
        self.globals: dict[str, Any] | None = target.__globals__ if function else None
        self.rank = rank
        self.options = options
        self.want = want
        self.compiled = compiled
        self.kernel = compiled.kernel
        self.dtypes = compiled.dtypes
        self.single = len(compiled.dtypes) == 1
        self.arrays = compiled.arrays
        self.read = read
        self.others: tuple[Memo, ...] = ()
        """Earlier memos of the same code (newest first, ``LANE_MEMOS`` in all), tried in
        turn when this one does not match: a loop whose calls alternate between capture
        types (a ping-pong whose first source is a host array and the rest device
        results) stays on the warm lane. Set once, before the memo is published."""
        self.launch = launcher(backend, compiled, values)
        """``(shape, outs, values)``: the kernel run with the values ``read`` returns."""
        # What the warm lane accepts of the next call's dtype=/out= arguments without
        # re-deriving ``want``: the same immutable dtype= object (or none), or one out=
        # array of the same type, or a tuple of out= arrays of the same types, one per
        # result (dtypes and shapes are checked on each call).
        self.dtype_arg: Any = dtype if out is None and immutable_dtype(dtype) else NEVER
        self.out_type: Any = _array_type(out) if out is not None else None
        self.out_types: tuple[type, ...] | None = None
        if type(out) is tuple and len(out) == len(self.dtypes) > 1:
            types_ = tuple(_array_type(o) for o in out)
            if all(t is not None for t in types_):
                self.out_types = types_  # type: ignore[assignment]

    def style(self) -> tuple[Any, ...]:
        """What a warm call must match to use this memo: a newer memo of the same style
        replaces it in the lane."""
        return (
            self.backend,
            self.options,
            self.globals,
            self.rank,
            self.read,
            self.dtype_arg,
            self.out_type,
            self.out_types,
        )


Launch = Callable[[tuple[int, ...], Sequence[Any], Sequence[Any]], None]


def launcher(backend: Backend, compiled: Compiled, values: Sequence[Any]) -> Launch:
    """How the warm lane launches ``compiled`` with values of the types of ``values``: the
    backend's fused function where it has one (``offload.ptx.fused``), else its captures
    prepared and the kernel launched (made once per specialisation and value types)."""
    key = tuple(map(type, values))
    found = compiled.launchers.get(key)
    if found is not None:
        return found
    kernel, prepare = compiled.kernel, backend.prepare_captures

    def general(shape: tuple[int, ...], outs: Sequence[Any], values: Sequence[Any]) -> None:
        kernel.launch(shape, outs, prepare(values))

    made: Launch = backend.launcher(compiled.ir, kernel, values, general) or general
    if len(compiled.launchers) < 16:
        compiled.launchers[key] = made
    return made


def _array_type(x: Any) -> type | None:
    """``type(x)`` if it is an array type (it has ``shape`` and ``dtype``), else ``None``."""
    t = type(x)
    return t if hasattr(t, "shape") and hasattr(t, "dtype") else None


NEVER = object()
"""A ``dtype=`` argument no call passes: the lane's ``dtype is memo.dtype_arg`` fails."""


def immutable_dtype(dtype: Any) -> bool:
    """Whether ``np.dtype(dtype)`` is the same every time it is asked (so the identity of
    ``dtype`` can stand for the dtypes it gives)."""
    if dtype is None or isinstance(dtype, np.dtype | str):
        return True
    return dtype in (float, int, bool, complex) or (
        isinstance(dtype, type) and issubclass(dtype, np.generic)
    )


LANES: dict[int, Memo] = {}
"""id(code) -> the memo of the last call of an element function with that code (the memo
holds the code object, so an id cannot be reused while it is here): the warm lane, found
without hashing a code object or building a key tuple. Its ``others`` are the memos of the
calls before, of other call styles."""
LANE_MEMOS = 4
"""Memos kept per code object: the last one and up to three earlier call styles."""
