"""The call graph of an element function and every helper it reaches; recursion check.

Helpers are inlined, so a cycle in the call graph (direct or mutual recursion, found as a
strongly connected component with Tarjan's algorithm) cannot be compiled: it is reported
once per cycle as ``RecursionNotAllowed`` at the call that closes it, with a note where the
recursive function is defined.
"""

from __future__ import annotations

import types
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from offload.analysis.calls import CallKind, ResolvedCall, resolve_calls
from offload.analysis.walk import FunctionContext
from offload.diagnostics import (
    Diagnostic,
    Note,
    OffloadError,
    RecursionNotAllowed,
    SourceUnavailable,
)
from offload.frontend.source import FunctionSource, get_source

Fn = types.FunctionType


@dataclass(frozen=True)
class Edge:
    """One helper call: ``caller`` calls ``callee`` at ``call``."""

    caller: Fn
    callee: Fn
    call: ResolvedCall


@dataclass
class Reached:
    """A function of the graph: its analysis context and how it was first reached."""

    fn: Fn
    ctx: FunctionContext
    calls: list[ResolvedCall]
    name: str
    """The name it is called by (a lambda helper is named after the variable holding it)."""
    via: Edge | None
    """The first call (breadth first from the element function) that reaches it."""


@dataclass
class CallGraph:
    """Functions in breadth-first order from the element function, and all helper calls."""

    root: Fn
    nodes: dict[Fn, Reached] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    problems: list[Diagnostic] = field(default_factory=list)
    """Helpers whose source cannot be read (reported at the call site)."""

    def path_notes(self, fn: Fn) -> tuple[Note, ...]:
        """'in 'helper' called from here' notes from ``fn`` out to the element function."""
        notes: list[Note] = []
        edge = self.nodes[fn].via
        seen: set[Fn] = set()
        while edge is not None and edge.callee not in seen:
            seen.add(edge.callee)
            caller = self.nodes[edge.caller]
            notes.append(
                Note(
                    f"in '{self.nodes[edge.callee].name}' called from here",
                    caller.ctx.src.span(edge.call.node),
                )
            )
            edge = caller.via
        return tuple(notes)


def build_call_graph(
    src: FunctionSource, callable_params: frozenset[str] = frozenset()
) -> CallGraph:
    """Explore the element function and, breadth first, every helper it calls."""
    ctx = FunctionContext.of(src, callable_params)
    graph = CallGraph(src.fn)
    graph.nodes[src.fn] = Reached(src.fn, ctx, resolve_calls(ctx), src.name, None)
    queue: deque[Fn] = deque([src.fn])
    while queue:
        caller = graph.nodes[queue.popleft()]
        for call in caller.calls:
            if call.kind is not CallKind.HELPER or not isinstance(call.target, Fn):
                continue
            callee: Fn = call.target
            edge = Edge(caller.fn, callee, call)
            if callee in graph.nodes:
                graph.edges.append(edge)
                continue
            try:
                helper_src = get_source(callee)
            except OffloadError as exc:
                graph.problems.append(_no_source(exc, caller, call))
                continue
            graph.edges.append(edge)
            helper_ctx = FunctionContext.of(helper_src)
            graph.nodes[callee] = Reached(
                callee, helper_ctx, resolve_calls(helper_ctx), call.name, edge
            )
            queue.append(callee)
    return graph


def _no_source(exc: OffloadError, caller: Reached, call: ResolvedCall) -> Diagnostic:
    first = exc.diagnostics[0] if exc.diagnostics else None
    message = first.message if first is not None else str(exc)
    hint = first.hint if first is not None and first.hint else "define helpers in a .py file"
    return Diagnostic(
        f"cannot inline helper '{call.name}': {message}",
        caller.ctx.src.span(call.node),
        SourceUnavailable.rule,
        hint,
    )


def strongly_connected_components(graph: CallGraph) -> list[list[Fn]]:
    """Tarjan's algorithm (iterative: deep helper chains must not hit Python's recursion
    limit); components come out in reverse topological order."""
    succ: dict[Fn, list[Fn]] = {fn: [] for fn in graph.nodes}
    for edge in graph.edges:
        succ[edge.caller].append(edge.callee)
    index: dict[Fn, int] = {}
    low: dict[Fn, int] = {}
    on_stack: set[Fn] = set()
    stack: list[Fn] = []
    components: list[list[Fn]] = []
    for start in graph.nodes:
        if start in index:
            continue
        work: list[tuple[Fn, Iterator[Fn]]] = [(start, iter(succ[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                component: list[Fn] = []
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    component.append(x)
                    if x is v:
                        break
                components.append(component)
    return components


def check_recursion(graph: CallGraph) -> list[Diagnostic]:
    """One ``RecursionNotAllowed`` per call-graph cycle."""
    order = {fn: k for k, fn in enumerate(graph.nodes)}
    out: list[Diagnostic] = []
    for component in strongly_connected_components(graph):
        members = set(component)
        inner = [e for e in graph.edges if e.caller in members and e.callee in members]
        if not inner:
            continue  # a single function that does not call itself
        entry = min(component, key=order.__getitem__)
        closing = min(
            (e for e in inner if e.callee is entry),
            key=lambda e: (order[e.caller], _position(e)),
        )
        cycle = _cycle_names(graph, inner, entry, closing.caller)
        if len(cycle) == 1:
            what = f"'{cycle[0]}' calls itself"
        else:
            what = " -> ".join(f"'{n}'" for n in [*cycle, cycle[0]])
        entry_src = graph.nodes[entry].ctx.src
        notes = (
            Note(
                f"'{graph.nodes[entry].name}' is defined here",
                entry_src.smap.def_span(entry_src.node),
            ),
            *graph.path_notes(closing.caller),
        )
        out.append(
            Diagnostic(
                f"recursion is not allowed in element functions ({what})",
                graph.nodes[closing.caller].ctx.src.span(closing.call.node),
                RecursionNotAllowed.rule,
                "helpers are inlined into the kernel; rewrite the recursion as a loop",
                notes,
            )
        )
    return out


def _position(edge: Edge) -> tuple[int, int]:
    node = edge.call.node
    return (node.lineno, node.col_offset)


def _cycle_names(graph: CallGraph, inner: list[Edge], entry: Fn, last: Fn) -> list[str]:
    """Names along a shortest path entry -> ... -> last inside the component."""
    parent: dict[Fn, Fn | None] = {entry: None}
    queue: deque[Fn] = deque([entry])
    while queue:
        v = queue.popleft()
        for e in inner:
            if e.caller is v and e.callee not in parent:
                parent[e.callee] = v
                queue.append(e.callee)
    path: list[Fn] = []
    node: Fn | None = last
    while node is not None:
        path.append(node)
        node = parent.get(node)
    return [graph.nodes[fn].name for fn in reversed(path)]
