"""Capture readers: the generated functions that read a call's captured values.

A kernel takes an element function's captured values as parameters, so every call reads
them again (a rebound global or closure cell is never stale). One generator, ``_generate``,
makes every function that does so, as straight-line code (one expression per path, from
``captures.steps_expr``): a loop over paths, a separate type check and a separate validity
check would cost more than the reads themselves, on every warm call.

* ``make_fetcher(paths)``: the values, nothing checked (the full path; errors propagate).
* ``make_reader(paths, values, resolved, pinned)``: the values, or ``None`` unless they
  have the types of ``values`` (the type tests, written only here), every helper and module
  built into the kernel is still what its path leads to, and pinned arrays still have the
  contents the kernel was specialised on (the warm lane's one call per launch).
* ``make_resolution_test(resolved)``: only the helper and module test (whether an entry's
  kernels are still valid for a root).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from offload.frontend.captures import INT64_END, INT64_MIN, capture_kind, steps_expr
from offload.frontend.values import Step

Reader = Callable[[object], "list[object] | None"]
"""Returns a root's current captured values, or ``None`` (see ``make_reader``)."""

Fetcher = Callable[[object], list[object]]
"""Returns a root's current captured values (see ``make_fetcher``)."""

Same = Callable[[Any], bool]
"""Whether a pinned array still has the contents a kernel was specialised on."""


class Path(Protocol):
    """A capture path (``captures.CapturePath``): the steps from the root to a value."""

    @property
    def steps(self) -> tuple[Step, ...]: ...


@dataclass(frozen=True)
class TypeTests:
    """What a reader checks of each value so that the capture type key
    (``captures.capture_type_key``) is unchanged without rebuilding it.

    The key depends only on each value's type, plus dtype and rank for arrays (both can
    change on one object: ``a.shape = ...`` reshapes in place). The tests never hold the
    values, so a reader neither keeps a rebound array alive nor returns a stale one."""

    types: tuple[type, ...]
    """The exact type of each value (a Python int must also fit in int64)."""
    arrays: tuple[tuple[int, Any, int], ...]
    """(capture index, dtype, ndim) of each array capture."""


def type_tests(values: Sequence[object]) -> TypeTests | None:
    """The ``TypeTests`` of ``values``, or ``None`` where a value's key is not a function of
    its type (and dtype/rank for arrays), e.g. a datetime64 scalar whose unit is per value."""
    arrays: list[tuple[int, Any, int]] = []
    for k, v in enumerate(values):
        tag = capture_kind(v)[0]
        if tag == "array":
            if not _array_by_type(type(v)):
                return None  # is_array answered for this instance, not for its type
            arr: Any = v
            arrays.append((k, arr.dtype, int(arr.ndim)))
        elif tag == "np":
            generic: Any = v
            if np.dtype(type(generic)).str != generic.dtype.str:
                return None
        elif tag == "object":
            return None  # keyed by type, but whether it is an array can be per instance
    return TypeTests(tuple(map(type, values)), tuple(arrays))


def _array_by_type(t: type) -> bool:
    return issubclass(t, np.ndarray) or any(
        hasattr(t, name)
        for name in ("__cuda_array_interface__", "__array_interface__", "__dlpack__")
    )


def make_fetcher(paths: Sequence[Path]) -> Fetcher:
    """A function returning the current values at ``paths`` from a root, in order. Nothing
    is checked: a deleted global or an emptied cell raises as the read would."""
    fetch: Fetcher = _generate(paths, None, (), ())
    return fetch


def make_reader(
    paths: Sequence[Path],
    values: Sequence[object],
    resolved: Sequence[tuple[Path, object]] = (),
    pinned: Sequence[tuple[int, Same]] = (),
) -> Reader | None:
    """A function returning the current values at ``paths`` from a root (a function or a
    delayed array), or ``None`` unless they have the ``type_tests`` of ``values`` (the
    values a kernel was compiled for), each resolved path still leads to its object (``is``)
    and each ``(k, same)`` of ``pinned`` has ``same(value k)``. Any exception while reading
    (a deleted global, an emptied cell) also gives ``None``: the caller's full path reads
    again and reports it. ``None`` instead of a reader where ``type_tests`` has none."""
    tests = type_tests(values)
    if tests is None:
        return None
    read: Reader = _generate(paths, tests, resolved, pinned)
    return read


def make_resolution_test(
    resolved: Sequence[tuple[Path, object]],
) -> Callable[[object], bool] | None:
    """Whether every resolved path (a helper or module built into the kernels at compile
    time) still leads from a root to its object; ``False`` also where a name was deleted or
    a cell emptied. ``None`` where nothing was resolved."""
    if not resolved:
        return None
    read: Reader = _generate((), TypeTests((), ()), resolved, ())
    return lambda root: read(root) is not None


def _generate(
    paths: Sequence[Path],
    tests: TypeTests | None,
    resolved: Sequence[tuple[Path, object]],
    pinned: Sequence[tuple[int, Same]],
) -> Any:
    """``read(root)``: the values at ``paths``; with ``tests``, ``None`` unless they pass
    ``tests``, ``resolved`` and ``pinned`` or if reading raises."""
    ns: dict[str, object] = {}
    hoisted: dict[str, str] = {}
    reads = [f"v{k} = {steps_expr(p.steps, str(k), ns, hoisted)}" for k, p in enumerate(paths)]
    conditions: list[str] = []
    if tests is not None:
        for k, t in enumerate(tests.types):
            ns[f"T{k}"] = t
            conditions.append(f"type(v{k}) is T{k}")
            if t is int:  # beyond int64 is another kind ("pybigint")
                conditions.append(f"{INT64_MIN} <= v{k} < {INT64_END}")
        for k, dtype, ndim in tests.arrays:
            ns[f"D{k}"] = dtype
            conditions.append(f"v{k}.ndim == {int(ndim)}")
            conditions.append(f"(v{k}.dtype is D{k} or v{k}.dtype == D{k})")
    for k, same in pinned:
        ns[f"P{k}"] = same
        conditions.append(f"P{k}(v{k})")
    for j, (path, obj) in enumerate(resolved):
        ns[f"R{j}"] = obj
        conditions.append(f"{steps_expr(path.steps, f'r{j}', ns, hoisted)} is R{j}")
    lines = [f"{name} = {value}" for name, value in hoisted.items()] + reads
    result = f"[{', '.join(f'v{k}' for k in range(len(paths)))}]"
    if tests is None:
        body = "".join(f"    {line}\n" for line in lines) + f"    return {result}\n"
    else:
        body = "    try:\n" + "".join(f"        {line}\n" for line in lines)
        body += f"        if {' and '.join(conditions) or 'True'}:\n            return {result}\n"
        body += "    except Exception:\n        pass\n    return None\n"
    exec(compile("def read(root):\n" + body, "<offload capture reader>", "exec"), ns)
    return ns["read"]
