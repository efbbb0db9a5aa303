"""The source text of a collective's functions, carried to the workers with them.

offload compiles a function from its source, found through its code object's file name.
A function that a worker cannot import by name (a lambda, a closure, anything defined in
``__main__`` or a notebook) reaches it pickled by value, and ``cloudpickle`` names the
file of every such code object ``<dynamic-code>``. So the client records, for the
functions a job calls (the function, the functions its closure and the globals it names
hold, recursively, and the code nested in them), each code object's file and the
top-level statements of that file that define them; the worker gives the unpickled code
objects their file names back and, where it cannot read that file, serves those
statements (at their own line numbers) from ``linecache``. Diagnostics then point at the
user's file and line, as on the client.
"""

from __future__ import annotations

import ast
import dis
import linecache
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

DYNAMIC = "<dynamic-code>"
"""The file name ``cloudpickle`` gives the code of a function pickled by value."""

CodeId = tuple[str, int]
"""A code object's qualified name and first line."""


@dataclass(frozen=True)
class Sources:
    """Where each code object of a job's functions was defined, and the text there."""

    files: tuple[tuple[str, int, tuple[tuple[int, tuple[str, ...]], ...]], ...]
    """Per file: its name, its line count, and (first line, lines) of each top-level
    statement that defines a code object of the job."""
    where: tuple[tuple[CodeId, str], ...]
    """Per code object (qualified name, first line): its file."""


def functions(root: object) -> Iterator[types.FunctionType]:
    """``root`` and every function it reaches through closure cells and the globals its
    code names (helpers it calls), each once."""
    seen: set[int] = set()
    todo = [root]
    while todo:
        fn = todo.pop()
        if not isinstance(fn, types.FunctionType) or id(fn) in seen:
            continue
        seen.add(id(fn))
        yield fn
        for cell in fn.__closure__ or ():
            try:
                todo.append(cell.cell_contents)
            except ValueError:  # an empty cell
                continue
        todo.extend(fn.__globals__.get(name) for name in global_names(fn.__code__))


def captured(root: object) -> Iterator[tuple[str, object]]:
    """Each name a function ``root`` reaches (``functions``) binds, with its value: the
    closure cells' and the globals' its code reads."""
    for fn in functions(root):
        cells = zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False)
        for name, cell in cells:
            try:
                yield name, cell.cell_contents
            except ValueError:
                continue
        for name in global_names(fn.__code__):
            if name in fn.__globals__:
                yield name, fn.__globals__[name]


def global_names(code: types.CodeType) -> set[str]:
    """The global names ``code`` (and the code nested in it) reads."""
    return {
        str(ins.argval)
        for c in codes(code)
        for ins in dis.get_instructions(c)
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")
    }


def codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code`` and the code objects nested in it (lambdas, inner functions)."""
    todo = [code]
    while todo:
        c = todo.pop()
        yield c
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))


def collect(*roots: object) -> Sources:
    """The ``Sources`` of the functions ``roots`` reach (on the client)."""
    wanted: dict[str, set[int]] = {}
    where: dict[CodeId, str] = {}
    for root in roots:
        for fn in functions(root):
            for code in codes(fn.__code__):
                if code.co_filename == DYNAMIC:
                    continue
                where[(code.co_qualname, code.co_firstlineno)] = code.co_filename
                wanted.setdefault(code.co_filename, set()).add(code.co_firstlineno)
    files = []
    for file, firsts in wanted.items():
        lines = linecache.getlines(file)
        if lines:
            files.append((file, len(lines), _statements(lines, firsts)))
    return Sources(tuple(files), tuple(where.items()))


def _statements(lines: list[str], firsts: set[int]) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """The top-level statements of a file's ``lines`` that hold any of the lines
    ``firsts`` (the whole file where it does not parse)."""
    try:
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError, RecursionError):
        return ((1, tuple(lines)),)
    out = []
    for stmt in tree.body:
        start = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
        end = stmt.end_lineno or stmt.lineno
        if any(start <= k <= end for k in firsts):
            out.append((start, tuple(lines[start - 1 : end])))
    return tuple(out)


def restore(sources: Sources, *roots: object) -> None:
    """Give the code of the functions ``roots`` reach their files back, and serve the
    recorded text of each file this process cannot read (on a worker; idempotent)."""
    where = dict(sources.where)
    for root in roots:
        for fn in functions(root):
            if any(c.co_filename == DYNAMIC for c in codes(fn.__code__)):
                fn.__code__ = _refiled(fn.__code__, where)
    for file, count, parts in sources.files:
        if linecache.getlines(file):
            continue  # the file is here: the check that it compiles to the code decides
        lines = [""] * count
        for start, text in parts:
            lines[start - 1 : start - 1 + len(text)] = text
        lines = [line if line.endswith("\n") else line + "\n" for line in lines]
        linecache.cache[file] = (sum(map(len, lines)), None, lines, file)


def _refiled(code: types.CodeType, where: dict[CodeId, str]) -> types.CodeType:
    consts: list[Any] = [
        _refiled(k, where) if isinstance(k, types.CodeType) else k for k in code.co_consts
    ]
    file = where.get((code.co_qualname, code.co_firstlineno), code.co_filename)
    return code.replace(co_filename=file, co_consts=tuple(consts))
