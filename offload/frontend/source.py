"""Finding a Python function's AST, mapping AST positions to spans, resolving its names.

The whole file is parsed (not ``inspect.getsource`` + dedent), so AST positions are the
file's own; ``SourceMap`` owns the byte-offset -> character-column conversion (the AST's
``col_offset`` counts UTF-8 bytes, diagnostics count characters).
"""

from __future__ import annotations
import __future__

import ast
import builtins
import functools
import linecache
import operator
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from offload.diagnostics import SourceUnavailable, Span, UnsupportedSyntax

FunctionNode = ast.FunctionDef | ast.Lambda


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""``FunctionSource.lookup`` result for a name that is bound nowhere."""


@dataclass(frozen=True)
class SourceMap:
    """Line/column arithmetic for one file."""

    file: str
    lines: tuple[str, ...]
    """The file's lines without trailing newlines (index 0 is line 1)."""

    def line_text(self, line: int) -> str:
        return self.lines[line - 1] if 1 <= line <= len(self.lines) else ""

    def char_col(self, line: int, byte_col: int) -> int:
        """Character column of a UTF-8 byte column on ``line`` (1-based)."""
        raw = self.line_text(line).encode("utf-8")
        return len(raw[:byte_col].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> Span:
        """The span of an AST node (which must carry positions)."""
        line: int = getattr(node, "lineno", 1)
        col: int = getattr(node, "col_offset", 0)
        end_line: int = getattr(node, "end_lineno", None) or line
        end_col: int | None = getattr(node, "end_col_offset", None)
        c0 = self.char_col(line, col)
        c1 = self.char_col(end_line, end_col) if end_col is not None else c0 + 1
        return Span(self.file, line, c0, end_line, c1, self.line_text(line))

    def def_span(self, node: FunctionNode) -> Span:
        """A short span for 'defined here' notes: the ``def name`` or ``lambda`` keyword."""
        line = node.lineno
        c0 = self.char_col(line, node.col_offset)
        length = len(f"def {node.name}") if isinstance(node, ast.FunctionDef) else len("lambda")
        return Span(self.file, line, c0, line, c0 + length, self.line_text(line))


_TREES: dict[tuple[str, tuple[str, ...]], ast.Module] = {}


def _parse_file(file: str, lines: tuple[str, ...]) -> ast.Module:
    key = (file, lines)
    tree = _TREES.get(key)
    if tree is None:
        tree = ast.parse("\n".join(lines), filename=file)
        _TREES[key] = tree
    return tree


@dataclass(frozen=True)
class FunctionSource:
    """A user function with its AST, source map and name environment."""

    fn: types.FunctionType
    node: FunctionNode
    smap: SourceMap

    @property
    def name(self) -> str:
        return self.fn.__code__.co_name

    @property
    def file(self) -> str:
        return self.smap.file

    def span(self, node: ast.AST) -> Span:
        return self.smap.span(node)

    def lookup(self, name: str) -> Any:
        """What ``name`` means inside the function: closure cell, global, builtin or MISSING."""
        code = self.fn.__code__
        if name in code.co_freevars and self.fn.__closure__ is not None:
            cell = self.fn.__closure__[code.co_freevars.index(name)]
            try:
                return cell.cell_contents
            except ValueError:
                return MISSING
        g = self.fn.__globals__
        if name in g:
            return g[name]
        b = g.get("__builtins__", builtins)
        bdict: dict[str, Any] = b if isinstance(b, dict) else vars(b)
        return bdict.get(name, MISSING)

    def param_names(self) -> list[str]:
        args = self.node.args
        return [a.arg for a in (*args.posonlyargs, *args.args)]


_SOURCES: dict[types.CodeType, FunctionSource] = {}


def get_source(fn: Callable[..., Any]) -> FunctionSource:
    """The ``FunctionSource`` of a plain Python function or lambda.

    Raises ``SourceUnavailable`` (an ``OffloadError``) for builtins, callables that are not
    plain functions, and functions whose source cannot be found (``python -c``, ``exec``
    of a string that is not in ``linecache``).
    """
    if not isinstance(fn, types.FunctionType):
        raise SourceUnavailable.at(
            f"element function must be a plain Python function or lambda, got {type(fn).__name__}",
            None,
            hint="wrap it: compute_p(shape, lambda i: obj(i)) is not allowed either; "
            "write a def that computes the element",
        )
    code = fn.__code__
    cached = _SOURCES.get(code)
    if cached is not None and cached.fn is fn:
        return cached
    file = code.co_filename
    lines = tuple(line.rstrip("\r\n") for line in linecache.getlines(file, fn.__globals__))
    if not lines:
        raise SourceUnavailable.at(
            f"the source of '{fn.__qualname__}' is not available (defined in {file})",
            None,
            hint="offload compiles from source: define the function in a .py file or a "
            "notebook cell, not with `python -c` or exec of a string",
        )
    try:
        tree = _parse_file(file, lines)
    except SyntaxError as exc:
        raise SourceUnavailable.at(
            f"the source file of '{fn.__qualname__}' could not be parsed: {exc.msg}", None
        ) from None
    smap = SourceMap(file, lines)
    found = _find_node(tree, fn)
    if isinstance(found, ast.AsyncFunctionDef):
        raise UnsupportedSyntax.at(
            f"'async def {found.name}' cannot be an element function or a helper",
            _def_span(smap, found, "async def"),
            hint="element functions are plain 'def' functions or lambdas",
        )
    if found is None:
        raise SourceUnavailable.at(
            f"could not find the definition of '{fn.__qualname__}' in {file} "
            f"(line {code.co_firstlineno}); the file may have changed since it was imported",
            None,
        )
    if not _compiles_to(file, lines, code):
        raise SourceUnavailable.at(
            f"the source of '{fn.__qualname__}' in {file} no longer matches the code "
            "that runs: the file changed since the function was defined",
            smap.def_span(found),
            hint="reload the module (or restart Python) so that the code that runs is the "
            "code in the file",
        )
    src = FunctionSource(fn, found, smap)
    _SOURCES[code] = src
    return src


def _first_line(node: FunctionNode | ast.AsyncFunctionDef) -> int:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.decorator_list:
        return node.decorator_list[0].lineno
    return node.lineno


def _def_span(smap: SourceMap, node: ast.AsyncFunctionDef, keyword: str) -> Span:
    line = node.lineno
    c0 = smap.char_col(line, node.col_offset)
    return Span(smap.file, line, c0, line, c0 + len(keyword), smap.line_text(line))


_MODULE_CODE: dict[tuple[str, tuple[str, ...], int], types.CodeType | None] = {}
_FUTURE_FLAGS = functools.reduce(
    operator.or_, (getattr(__future__, f).compiler_flag for f in __future__.all_feature_names)
)


def _compiles_to(file: str, lines: tuple[str, ...], code: types.CodeType) -> bool:
    """Whether compiling the parsed file gives ``code`` (the code Python runs): false when
    the file was edited after the function was defined. Where no code object of the file
    has ``code``'s name and first line (source shown by a tool that rewrote it), there is
    nothing to compare and the source is trusted."""
    # The future flags a function was compiled with come from its file or from the code
    # that exec'd it (compile() inherits its caller's): compile with the same ones.
    futures = code.co_flags & _FUTURE_FLAGS
    key = (file, lines, futures)
    if key not in _MODULE_CODE:
        # From the text (the parsed tree's): compiling the AST object checks its depth
        # against Python's recursion limit from here (a chain of ~1000 ``elif`` fails), the
        # text's compile against a three times larger one, as the import did.
        try:
            text = "\n".join(lines)
            _MODULE_CODE[key] = compile(text, file, "exec", flags=futures, dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError):
            _MODULE_CODE[key] = None
    module = _MODULE_CODE[key]
    if module is None:
        return True
    want = _code_key(code)
    found = False
    for candidate in _nested_code(module):
        if candidate.co_name == code.co_name and candidate.co_firstlineno == code.co_firstlineno:
            if _code_key(candidate) == want:
                return True
            found = True
    return not found


def _nested_code(code: types.CodeType) -> list[types.CodeType]:
    out: list[types.CodeType] = []
    stack = [code]
    while stack:
        c = stack.pop()
        out.append(c)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return out


def _code_key(code: types.CodeType) -> object:
    """What a code object computes: its bytecode, constants (nested code compared alike),
    names and parameters; not its line table (a comment edit does not change the program)."""
    return (
        code.co_code,
        tuple(_const_key(k) for k in code.co_consts),
        code.co_names,
        code.co_varnames,
        code.co_freevars,
        code.co_cellvars,
        code.co_argcount,
        code.co_flags,
    )


def _const_key(k: object) -> object:
    if isinstance(k, types.CodeType):
        return _code_key(k)
    if isinstance(k, tuple | frozenset):
        return (type(k).__name__, tuple(_const_key(x) for x in k))
    return (type(k).__name__, repr(k))


def _find_node(
    tree: ast.Module, fn: types.FunctionType
) -> FunctionNode | ast.AsyncFunctionDef | None:
    code = fn.__code__
    # The code's own name: functools.wraps copies the wrapped function's __name__ onto
    # the wrapper, but the wrapper's code is what runs.
    is_lambda = code.co_name == "<lambda>"
    candidates: list[FunctionNode] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.AsyncFunctionDef)
            and node.name == code.co_name
            and _first_line(node) == code.co_firstlineno
        ):
            return node
        if (is_lambda and isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno) or (
            not is_lambda
            and isinstance(node, ast.FunctionDef)
            and node.name == code.co_name
            and _first_line(node) == code.co_firstlineno
        ):
            candidates.append(node)
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    # Several lambdas on one line: pick the one whose body holds the code's first position.
    # (RESUME and the implicit return carry column 0: skip them.)
    positions = [
        (p[0], p[2])
        for p in code.co_positions()
        if p[0] is not None and p[2] is not None and p[3] is not None and p[3] > p[2]
    ]
    if not positions:
        return candidates[0]
    first = min(positions)
    best: FunctionNode | None = None
    best_range: tuple[tuple[int, int], tuple[int, int]] | None = None
    for node in candidates:
        body = node.body if isinstance(node, ast.Lambda) else node
        start = (body.lineno, body.col_offset)
        end = (body.end_lineno or body.lineno, body.end_col_offset or 0)
        # Lambdas nest (`lambda: f(lambda i: i)`): the innermost body holding the code's
        # first position is this code's lambda.
        if start <= first <= end and (best_range is None or best_range[0] <= start):
            best, best_range = node, (start, end)
    return best if best is not None else candidates[0]
