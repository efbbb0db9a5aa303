"""Capture readers: the warm path's one call that re-reads and re-checks captured values.

A kernel takes an element function's captured values as parameters, so every call must
read them again (a rebound global or closure cell is never stale) and check that they
still have the types the kernel was compiled for. ``make_reader`` generates one
straight-line function doing the reads, the type checks, and the checks that the helpers
and modules built into the kernel are still what their names lead to: cheaper than a loop
over paths, a separate type guard and a separate validity check (three calls per launch).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from offload.ir.capture_steps import Steps, steps_expr

Reader = Callable[[object], "list[object] | None"]
"""Returns a root's current captured values, or ``None`` (see ``make_reader``)."""

INT64_MIN, INT64_END = -(2**63), 2**63


def make_reader(
    paths: Sequence[Steps],
    types: Sequence[type],
    arrays: Sequence[tuple[int, Any, int]],
    resolved: Sequence[tuple[Steps, object]] = (),
    pinned: Sequence[tuple[int, Callable[[Any], bool]]] = (),
) -> Reader:
    """A function returning the current values at ``paths`` from a root (a function or a
    delayed array), or ``None`` unless value ``k`` has exactly type ``types[k]`` (and an
    int fits in int64), each ``(k, dtype, ndim)`` of ``arrays`` has that dtype and rank, and
    each resolved path still leads to its object (``is``) and each ``(k, same)`` of
    ``pinned`` has ``same(value k)`` (a kernel specialised on that value). Any exception
    while reading (a deleted global, an emptied cell) also gives ``None``: the caller's
    full path reads again and reports it."""
    ns: dict[str, object] = {}
    hoisted: dict[str, str] = {}
    reads = [f"v{k} = {steps_expr(steps, str(k), ns, hoisted)}" for k, steps in enumerate(paths)]
    tests: list[str] = []
    for k, t in enumerate(types):
        ns[f"T{k}"] = t
        tests.append(f"type(v{k}) is T{k}")
        if t is int:  # beyond int64 is another type key ("pybigint")
            tests.append(f"{INT64_MIN} <= v{k} < {INT64_END}")
    for k, dtype, ndim in arrays:
        ns[f"D{k}"] = dtype
        tests += [f"v{k}.ndim == {int(ndim)}", f"(v{k}.dtype is D{k} or v{k}.dtype == D{k})"]
    for k, same in pinned:
        ns[f"P{k}"] = same
        tests.append(f"P{k}(v{k})")
    for j, (steps, obj) in enumerate(resolved):
        ns[f"R{j}"] = obj
        tests.append(f"{steps_expr(steps, f'r{j}', ns, hoisted)} is R{j}")
    lines = [f"{name} = {value}" for name, value in hoisted.items()] + reads
    values = ", ".join(f"v{k}" for k in range(len(paths)))
    code = "def read(root):\n    try:\n"
    code += "".join(f"        {line}\n" for line in lines)
    code += f"        if {' and '.join(tests) or 'True'}:\n            return [{values}]\n"
    code += "    except Exception:\n        pass\n    return None\n"
    exec(compile(code, "<offload capture reader>", "exec"), ns)
    read: Reader = ns["read"]  # type: ignore[assignment]
    return read
