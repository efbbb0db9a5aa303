"""Printing emitted statements as Python source, with ``# offload: file:line`` comments.

``ast.unparse`` cannot emit comments, so the emitter leaves string-expression markers
(``'__offload_line__:kernels.py:14'``) which ``print_source`` rewrites into comments. The
output is deterministic: the same tree prints the same text.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from offload.emit.hooks import EmitHooks
from offload.emit.structure import LINE_MARKER, emit_body
from offload.ir.core import Function

_MARKER_LINE = re.compile(r"^(\s*)((?:'|\"|\"\"\"|\'\'\')" + re.escape(LINE_MARKER) + r".*)$")

HEADER = "import math\nimport numpy as np\n"
"""The imports every emitted module starts with (the names ``math`` and ``np``)."""


def print_source(node: ast.AST | list[ast.stmt]) -> str:
    """The source text of ``node`` (or of a statement list) with line markers as comments."""
    if isinstance(node, list):
        node = ast.Module(body=node, type_ignores=[])
    text = ast.unparse(ast.fix_missing_locations(node))
    out: list[str] = []
    for line in text.splitlines():
        m = _MARKER_LINE.match(line)
        if m is not None:
            literal = ast.literal_eval(m.group(2))
            assert isinstance(literal, str)
            out.append(f"{m.group(1)}# offload: {literal[len(LINE_MARKER) :]}")
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def emit_source(
    fn: Function,
    hooks: EmitHooks,
    wrap: Callable[[list[ast.stmt]], list[ast.stmt]],
) -> str:
    """A whole module: ``HEADER`` plus ``wrap(emit_body(fn, hooks))`` (the backend's kernel
    function around the element body), printed with line comments."""
    return HEADER + "\n\n" + print_source(wrap(emit_body(fn, hooks)))
