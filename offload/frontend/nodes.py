"""What the frontend needs of a delayed-array node: a small typed interface.

A node of a delayed-array tree (``offload.delayed``; the collectives to come) subclasses
``ArrayNode``: it names the element functions and the sources it holds (for the structural
key and the restriction checks) and lowers its own element through ``ElementLowering``, the
operations the frontend offers at a symbolic index. The frontend never imports the modules
that define nodes, so they may import the frontend (to infer dtypes, to lower the user's
functions).
"""

from __future__ import annotations

import abc
import types
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

from offload.frontend.captures import capture_kind
from offload.frontend.values import Getter, Scalar, Step, Val

NodePath = tuple[Step, ...]
"""Steps from the root of the tree (the lowering target) to a node, source or function."""
Index = Sequence[Scalar]
"""A symbolic index: one integer scalar per dimension."""


_CAPTURES_ONLY: ContextVar[bool] = ContextVar("offload_captures_only", default=False)


class captures_only:  # (lower case: used as ``with captures_only():``)
    """While active, a collective that can lowers to what it captures alone (its sources'
    elements, its functions applied to them): the lowering of a tree holding collectives
    that the replay lane makes for its entry's ``fetch`` -- which values the tree
    captures, and where -- and never compiles. (A class, not ``contextlib``'s generator:
    every warm call of a tree enters it, and a generator costs a microsecond more.)"""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _CAPTURES_ONLY.set(True)

    def __exit__(self, *exc: object) -> None:
        _CAPTURES_ONLY.reset(self._token)


def lowering_captures_only() -> bool:
    """Whether ``captures_only`` is active."""
    return _CAPTURES_ONLY.get()


_TYPES_ONLY: ContextVar[bool] = ContextVar("offload_types_only", default=False)


class types_only:  # (lower case: used as ``with types_only():``)
    """While active, a collective lowers to a value of its result's dtypes that stands for
    its element (never computed): the lowering that ``Delayed.dtypes`` makes of a tree
    whose producers sit over collectives, for its result types alone."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _TYPES_ONLY.set(True)

    def __exit__(self, *exc: object) -> None:
        _TYPES_ONLY.reset(self._token)


def lowering_types_only() -> bool:
    """Whether ``types_only`` is active."""
    return _TYPES_ONLY.get()


@dataclass(frozen=True)
class NodeFunction:
    """An element function a node holds, as the attribute ``attr`` of the node."""

    attr: str
    fn: Callable[..., Any]
    callable_params: tuple[str, ...] = ()
    """Parameters the node binds to callables (``traverse``'s element getter)."""


class ElementLowering(Protocol):
    """The lowering operations a node uses to lower its element at a symbolic index."""

    def element(self, source: object, path: NodePath, idx: Index) -> Val:
        """The element of ``source`` (an array or a node, reached by ``path``) at ``idx``."""
        ...

    def call(self, fn: Callable[..., Any], path: NodePath, args: Sequence[Val]) -> Val:
        """``fn(*args)`` inlined (``fn`` reached by ``path``)."""
        ...

    def getter(self, source: object, path: NodePath) -> Getter:
        """The element getter of ``source``, passed to a function as an argument."""
        ...

    def index_scalars(self, t: Val, ndim: int, what: str) -> list[Scalar]:
        """``t`` (an int or a tuple of ints) as ``ndim`` integer scalars."""
        ...

    def unravel(self, new: tuple[int, ...], old: tuple[int, ...], idx: Index) -> list[Scalar]:
        """Index ``idx`` of shape ``new`` as the index of shape ``old`` at the same
        row-major position."""
        ...

    def constant(self, value: bool | int | float) -> Scalar:
        """A Python (weak) literal ``value``, folded into the kernel."""
        ...

    def captured(self, value: object, path: NodePath) -> Val:
        """A number or array held by a node at ``path`` (``("attr", name)`` steps from the
        root), captured: a kernel parameter re-read at every call, never a constant."""
        ...

    def binop(self, op: str, a: Scalar, b: Scalar) -> Scalar:
        """``a <op> b`` with NEP 50 typing (``op``: ``add``, ``sub``, ``mul``,
        ``floordiv``, ``mod``, ...: the keys of ``frontend.promote.BINARY_OPERATORS``)."""
        ...

    def loop(
        self,
        start: Scalar,
        stop: Scalar,
        step: Scalar,
        init: Val,
        body: Callable[[Scalar, Val], Val],
    ) -> Val:
        """``acc = init; for k in range(start, stop, step): acc = body(k, acc)``, the
        result ``acc`` (``step`` > 0). ``acc`` is a number or a tuple of numbers whose
        types are joined until stable, as a Python loop variable's are."""
        ...

    def branch(
        self,
        cond: Scalar,
        then: Callable[[], Val],
        orelse: Callable[[], Val],
        *,
        uniform: bool = False,
    ) -> Val:
        """``then() if cond else orelse()``: each lowered in its own block (so a read one
        arm makes is never made by the other), the two values -- numbers or tuples of
        numbers of one structure -- joined as a Python variable assigned in both arms of
        an ``if`` is. ``uniform``: most elements take the same arm (``Branch.uniform``)."""
        ...


class ArrayNode(abc.ABC):
    """A node of a delayed-array tree (see the module docstring)."""

    shape: tuple[int, ...]

    @abc.abstractmethod
    def functions(self) -> tuple[NodeFunction, ...]:
        """The element functions this node holds (not those of its sources)."""

    @abc.abstractmethod
    def sources(self) -> tuple[tuple[str, object], ...]:
        """``(attribute, array or node)`` for each source this node reads."""

    def static_key(self) -> tuple[object, ...]:
        """What else the lowering of this node depends on (a reshape's shapes)."""
        return ()

    @abc.abstractmethod
    def lower_element(self, lo: ElementLowering, path: NodePath, idx: Index) -> Val:
        """This node's element at ``idx``; ``path`` leads from the root to this node."""


def delayed_key(target: object) -> tuple[object, ...]:
    """A structural key: equal for two separately built but identical trees (same
    functions, same leaf array dtypes and ranks), so that a driver can reuse a lowering.
    (Computed on every warm call of a tree: node types are tested through ``_IS_NODE``,
    as an ``isinstance`` test against the ABC costs about a microsecond.)"""
    t = type(target)
    node = _IS_NODE.get(t)
    if node is None:
        node = _IS_NODE[t] = issubclass(t, ArrayNode)
    if not node:
        return capture_kind(target)
    n: Any = target
    return (
        t.__name__,
        *[function_key(f.fn) for f in n.functions()],
        *n.static_key(),
        *[delayed_key(source) for _, source in n.sources()],
    )


_IS_NODE: dict[type, bool] = {}


def function_key(fn: object) -> object:
    """What a lowering of the node function ``fn`` depends on: its code, its globals and
    its defaults (bound as constants, by type and bits); not its closure, whose cells the
    capture readers read from the function at hand. So a lambda re-created on every call
    (``map(lambda v: v * 2.0, x)``) is lowered once. Any other callable, or a default that
    is not a number, is keyed by identity."""
    if type(fn) is not types.FunctionType:
        return fn
    if fn.__defaults__ is None and fn.__kwdefaults__ is None:
        return (fn.__code__, id(fn.__globals__))
    named = sorted((fn.__kwdefaults__ or {}).items())
    keys = [_number_key(d) for d in (*(fn.__defaults__ or ()), *(d for _, d in named))]
    if None in keys:
        return fn
    return (fn.__code__, id(fn.__globals__), tuple(keys), tuple(name for name, _ in named))


def _number_key(d: object) -> object:
    if type(d) is float:
        return (float, d.hex())
    if type(d) in (bool, int):
        return (type(d), d)
    return None


def walk_functions(target: object) -> list[NodeFunction]:
    """Every element function held in the tree ``target``, sources first, each once."""
    if not isinstance(target, ArrayNode):
        return []
    out: list[NodeFunction] = []
    for _, source in target.sources():
        out.extend(f for f in walk_functions(source) if f not in out)
    out.extend(f for f in target.functions() if f not in out)
    return out
