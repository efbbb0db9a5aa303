"""Keep the kernel's nesting independent of the length of ``if``/``elif`` chains.

The structuriser nests each ``elif`` one level deeper than the last (its condition is
computed in the ``else`` branch, so Python cannot print it as ``elif``); a chain of ~100 arms
would pass Python's indentation limit (100). A long chain is rewritten into a flat
sequence guarded by a counter of the ``else`` branches entered, which LLVM's jump
threading folds back into the chain::

    if c0:                          _chain0 = 0
        A0                          if c0:
    else:                               A0
        x = ...                     else:
        if c1:            ->            _chain0 = 1
            A1                      if _chain0 == 1:
        else:                           x = ...
            A2                          if c1:
        z = ...                             A1
                                        else:
                                            _chain0 = 2
                                    if _chain0 == 2:
                                        A2
                                    if _chain0 >= 1:
                                        z = ...

An arm that ends in ``break``/``continue`` leaves as before (the statements after it are
skipped in both forms). What nesting is left is the source's own, which ``check_depth``
bounds with a located error.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from offload.diagnostics import Span, UnsupportedSyntax
from offload.emit.template import assign, expr, name

CHAIN_VAR = "_chain"
"""Prefix of the flags of flattened chains (``_chain0``, ``_chain1``, ...)."""

MIN_CHAIN = 16
"""Chains with fewer arms keep their nested form (the readable one)."""

MAX_BLOCK_DEPTH = 80
"""The deepest nesting of blocks an element body may have: Python allows 100 indentation
levels, and the backends' kernels wrap the body in up to about 10 more."""

MAX_LOOP_DEPTH = 16
"""The most loops an element body may nest: Python allows 20 statically nested blocks,
and the backends wrap the body in up to 3 loops of their own."""


@dataclass
class _Counter:
    n: int = 0


def flatten_chains(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """``stmts`` with every ``if``/``else`` chain of ``MIN_CHAIN`` or more arms flattened."""
    return _flatten(stmts, _Counter())


def _flatten(stmts: list[ast.stmt], counter: _Counter) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for s in stmts:
        if isinstance(s, ast.If):
            levels, last = _chain(s)
            if len(levels) >= MIN_CHAIN:
                out.extend(_flat_chain(levels, last, counter))
                continue
            s.body = _flatten(s.body, counter)
            s.orelse = _flatten(s.orelse, counter)
        elif isinstance(s, (ast.While, ast.For)):
            s.body = _flatten(s.body, counter)
            s.orelse = _flatten(s.orelse, counter)
        out.append(s)
    return out


_Level = tuple[list[ast.stmt], ast.expr, list[ast.stmt], list[ast.stmt]]
"""One level of a chain: the statements before its test, the test, its body, and the
statements after it that still belong to the enclosing ``else``."""


def _chain(node: ast.If) -> tuple[list[_Level], list[ast.stmt]]:
    """The levels of the chain that starts at ``node`` and the statements of its last
    ``else`` (iteratively: a chain may be longer than Python's recursion limit). The next
    level is the last ``if`` of an ``else``; any split is correct, that one is the chain."""
    levels: list[_Level] = [([], node.test, node.body, [])]
    rest = node.orelse
    while True:
        at = [k for k, s in enumerate(rest) if isinstance(s, ast.If)]
        if not at:
            return levels, rest
        nxt = rest[at[-1]]
        assert isinstance(nxt, ast.If)
        levels.append((rest[: at[-1]], nxt.test, nxt.body, rest[at[-1] + 1 :]))
        rest = nxt.orelse


def _flat_chain(levels: list[_Level], last: list[ast.stmt], counter: _Counter) -> list[ast.stmt]:
    """``_chainN`` counts the ``else`` branches entered: level ``k`` runs when it is ``k``,
    and the statements after level ``k``'s ``if`` (inside the ``else`` of level ``k - 1``)
    run, innermost first, when it is at least ``k``."""
    flag = f"{CHAIN_VAR}{counter.n}"
    counter.n += 1
    out: list[ast.stmt] = [assign(flag, ast.Constant(0))]
    for k, (pre, test, body, _) in enumerate(levels):
        enter = assign(flag, ast.Constant(k + 1))
        stmts = [*_flatten(pre, counter), ast.If(test, _flatten(body, counter), [enter])]
        out.extend(stmts if k == 0 else [ast.If(_at(flag, "==", k), stmts, [])])
    if last:
        out.append(ast.If(_at(flag, "==", len(levels)), _flatten(last, counter), []))
    for k in reversed(range(1, len(levels))):
        post = levels[k][3]
        if post:
            out.append(ast.If(_at(flag, ">=", k), _flatten(post, counter), []))
    return out


def _at(flag: str, op: str, k: int) -> ast.expr:
    return expr(f"f {op} k", f=name(flag), k=ast.Constant(k))


def check_depth(stmts: list[ast.stmt], fn_name: str, span: Span | None) -> None:
    """Raise a located ``UnsupportedSyntax`` if ``stmts`` nest deeper than the backends'
    kernels can hold (``MAX_BLOCK_DEPTH`` blocks, ``MAX_LOOP_DEPTH`` loops)."""
    blocks, loops = _depth(stmts)
    if blocks > MAX_BLOCK_DEPTH or loops > MAX_LOOP_DEPTH:
        what = (
            f"{loops} nested loops (the limit is {MAX_LOOP_DEPTH})"
            if loops > MAX_LOOP_DEPTH
            else f"blocks nested {blocks} deep (the limit is {MAX_BLOCK_DEPTH})"
        )
        raise UnsupportedSyntax.at(
            f"'{fn_name}' has {what}, more than a kernel can hold",
            span,
            hint="move the innermost part into a helper function, or split the conditions",
        )


def _depth(stmts: list[ast.stmt]) -> tuple[int, int]:
    """(block depth, loop depth) of ``stmts``, with an explicit stack (no recursion)."""
    blocks = loops = 0
    stack: list[tuple[list[ast.stmt], int, int]] = [(stmts, 0, 0)]
    while stack:
        body, b, lp = stack.pop()
        blocks, loops = max(blocks, b), max(loops, lp)
        for s in body:
            if isinstance(s, ast.If):
                stack.append((s.body, b + 1, lp))
                stack.append((s.orelse, b + 1, lp))
            elif isinstance(s, (ast.While, ast.For)):
                stack.append((s.body, b + 1, lp + 1))
                stack.append((s.orelse, b + 1, lp))
    return blocks, loops
