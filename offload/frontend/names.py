"""Name resolution of the lowering: a name is a local, or an object found in the function's
closure, globals or builtins; such an object is captured (a kernel parameter re-read at
call time: numbers, NumPy scalars, arrays) or resolved at compile time (modules, helpers,
intrinsics), and either way recorded with the path that finds it again."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from offload.diagnostics import TypeMismatch, UnresolvedCall
from offload.frontend.captures import (
    capture_ir_type,
    indexing_differs,
    is_array,
    refused_array_message,
)
from offload.frontend.core import LoweringCore
from offload.frontend.intrinsics import lookup_intrinsic
from offload.frontend.source import MISSING
from offload.frontend.values import ArrayRef, PyObj, Scalar, Step, TupleVal, Unbound, Val
from offload.ir.core import Capture
from offload.ir.types import I64, ArrayType


@dataclass(frozen=True)
class Names:
    """Resolves names and classifies the objects they denote (one per lowering)."""

    core: LoweringCore

    def resolve_name(self, name: str, node: ast.AST) -> Val:
        ctx = self.core.ctx
        if name in ctx.env:
            val = ctx.env[name]
            if isinstance(val, Unbound):
                raise self.core.error(
                    TypeMismatch,
                    f"'{name}' cannot be used here: {val.reason}",
                    node,
                    hint=f"assign '{name}' one kind of value before the branches or loop",
                )
            return val
        if name in ctx.locals:
            raise self.core.error(
                TypeMismatch,
                f"local variable '{name}' is used before it is assigned",
                node,
            )
        memo = ctx.resolved.get(name)
        if memo is not None:
            return memo
        fn = ctx.src.fn
        obj = ctx.src.lookup(name)
        if obj is MISSING:
            raise self.core.error(
                UnresolvedCall, f"name '{name}' is not defined", node, rule_hint(name)
            )
        path: tuple[Step, ...] | None
        if name in fn.__code__.co_freevars:
            path = (*ctx.base_path, ("closure", fn.__code__.co_freevars.index(name)))
        elif name in fn.__globals__:
            path = (*ctx.base_path, ("global", name))
        else:
            path = None  # a builtin
        val = self.classify(obj, path, name, node)
        ctx.resolved[name] = val
        return val

    def classify(
        self, obj: object, path: tuple[Step, ...] | None, name: str, node: ast.AST | None
    ) -> Val:
        """What a Python object found by name or attribute means in the element function."""
        if type(obj) is tuple and path is not None and len(obj) <= MAX_CAPTURED_TUPLE:
            captured = self._tuple(obj, path, name, node)
            if captured is not None:
                return captured
        capturable = type(obj) in (bool, int, float) or is_array(obj)
        capturable = capturable or (
            lookup_intrinsic(obj) is None and capture_ir_type(obj) is not None
        )
        if not capturable or path is None:
            if path is not None:
                key = tuple((k, id(a) if k == "const" else a) for k, a in path)
                self.core.resolved_objects[key] = (path, obj)
            return PyObj(obj, path, name)
        key = tuple((k, id(a) if k == "const" else a) for k, a in path)
        cached = self.core.capture_values.get(key)
        if cached is not None:
            return cached
        typed = capture_ir_type(obj)
        if type(obj) is not np.ndarray and indexing_differs(type(obj)):
            raise self.core.error(
                TypeMismatch, refused_array_message(f"captured '{name}'", type(obj)), node
            )
        if type(obj) is int and not -(2**63) <= obj < 2**63:
            return self.frozen_int(obj, path, key, name, node)
        if typed is None:
            dtype = getattr(obj, "dtype", type(obj).__name__)
            raise self.core.error(
                TypeMismatch,
                f"captured '{name}' has an unsupported element type ({dtype})",
                node,
                hint="use bool, int8..int64, uint8..uint64, float32 or float64",
            )
        t, weak = typed
        saved = self.core.b.block, self.core.b.span
        value = self.core.b.add_capture(Capture(name, t))
        self.core.b.block, self.core.b.span = saved
        val: Val = ArrayRef(value, name) if isinstance(t, ArrayType) else Scalar(value, weak)
        self.core.capture_values[key] = val
        self.core.capture_paths.append(path)
        return val

    def _tuple(
        self, obj: tuple[object, ...], path: tuple[Step, ...], name: str, node: ast.AST | None
    ) -> TupleVal | None:
        """A captured tuple of numbers (or arrays, or such tuples): each item a capture
        (re-read every call), and a guard that the tuple keeps the length the kernel was
        built for. ``None`` where an item is not capturable (a function): a Python object."""
        items = [
            self.classify(x, (*path, ("item", k)), f"{name}[{k}]", node) for k, x in enumerate(obj)
        ]
        if any(isinstance(v, PyObj) for v in items):
            return None
        guard = (*path, ("length_is", len(obj)))
        key = tuple((k, id(a) if k == "const" else a) for k, a in guard)
        self.core.resolved_objects[key] = (guard, True)
        return TupleVal(tuple(items))

    def frozen_captured_int(self, name: str) -> int | None:
        """The value of ``name`` where it is a captured Python int (not a local, not bool),
        frozen into the kernel like a helper (valid while its path leads to this object);
        ``None`` otherwise. For compile-time sizes (``np.zeros(N + 1)``)."""
        ctx = self.core.ctx
        if name in ctx.env or name in ctx.locals:
            return None
        fn = ctx.src.fn
        obj = ctx.src.lookup(name)
        if type(obj) is not int:
            return None
        if name in fn.__code__.co_freevars:
            path: tuple[Step, ...] = (
                *ctx.base_path,
                ("closure", fn.__code__.co_freevars.index(name)),
            )
        elif name in fn.__globals__:
            path = (*ctx.base_path, ("global", name))
        else:
            return None
        key = tuple((k, id(a) if k == "const" else a) for k, a in path)
        self.core.resolved_objects[key] = (path, obj)
        return obj

    def frozen_int(
        self,
        obj: int,
        path: tuple[Step, ...],
        key: tuple[object, ...],
        name: str,
        node: ast.AST | None,
    ) -> Val:
        """A captured Python int beyond int64 (``0xbf58476d1ce4e5b9``): no kernel parameter
        holds it, so the kernel is specialised on it — a constant, valid while ``path``
        still leads to this very object (the resolution test)."""
        if not -(2**63) <= obj < 2**64:
            raise self.core.error(
                TypeMismatch,
                f"captured '{name}' = {obj} does not fit int64 or uint64",
                node,
                hint="integers in element functions are 64-bit; capture a float instead",
            )
        self.core.resolved_objects[key] = (path, obj)
        self.core.at(node)
        return self.core.const(obj, (I64, True))


def rule_hint(name: str) -> str:
    return f"define '{name}' at module level or in an enclosing function before compiling"


MAX_CAPTURED_TUPLE = 64
"""Items of a captured tuple beyond which it is not captured item by item."""
