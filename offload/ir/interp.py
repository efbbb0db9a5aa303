"""The IR interpreter: the executable specification every backend is tested against.

``evaluate`` runs an element function at one index; ``compute`` runs it at every index
of a shape (row-major) and gathers the results into arrays. Scalar semantics come from
``semantics.eval_op_unchecked``; this module adds control flow, ``LOAD`` and ``SHAPE``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from offload.ir.core import Block, Branch, Function, Jump, Op, Return, Value
from offload.ir.ops import LOCAL_OPS, TILE_OPS, Opcode
from offload.ir.semantics import eval_op_unchecked
from offload.ir.tile_ops import eval_tile_op
from offload.ir.types import ArrayType, LocalType, ScalarType

DEFAULT_MAX_STEPS = 10_000_000
"""Default limit on executed ops + terminators per element (guards against endless loops)."""


class StepLimitExceeded(RuntimeError):
    """The interpreter ran more steps than allowed for one element (likely an endless loop)."""


class InterpreterError(RuntimeError):
    """The IR cannot be run (a missing terminator, an undefined value): a compiler bug."""


def _convert_capture(value: object, param: Value, name: str) -> Any:
    t = param.type
    if isinstance(t, ArrayType):
        arr = np.asarray(value)
        if arr.ndim != t.ndim or arr.dtype != t.elem.dtype:
            raise TypeError(
                f"capture {name!r} expects {t} (dtype {t.elem.dtype}), "
                f"got an array of dtype {arr.dtype} with {arr.ndim} dimension(s)"
            )
        return arr
    assert isinstance(t, ScalarType)
    if isinstance(value, np.ndarray):
        if value.ndim != 0:
            raise TypeError(f"capture {name!r} expects a scalar {t}, got an array")
        value = value[()]
    return t.dtype.type(value)


class _Machine:
    """A function prepared for repeated evaluation (captures bound once)."""

    def __init__(self, fn: Function, captures: Sequence[object], max_steps: int) -> None:
        self.fn = fn
        self.max_steps = max_steps
        self.prologue: _Machine | None = None
        if fn.prologue is not None and len(captures) == len(fn.prologue.captures):
            # The hoisted work runs once, before the first element (``Function.prologue``):
            # given only the leading captures, the machine computes the trailing ones.
            self.prologue = _Machine(fn.prologue, captures, max_steps)
            captures = [*captures, *(np.zeros(1, t.dtype) for t in fn.prologue.result_types)]
        n_caps = len(fn.params) - fn.n_index
        if len(captures) != n_caps:
            raise TypeError(
                f"function @{fn.name} takes {n_caps} capture(s), {len(captures)} were given"
            )
        self.capture_values = [
            _convert_capture(v, p, fn.captures[k].name if k < len(fn.captures) else f"#{k}")
            for k, (v, p) in enumerate(zip(captures, fn.capture_params, strict=True))
        ]
        self.array_names: dict[Value, str] = {
            p: (fn.captures[k].name if k < len(fn.captures) else f"#{k}")
            for k, p in enumerate(fn.capture_params)
        }

    def run(self, index: Sequence[int]) -> tuple[np.generic, ...]:
        fn = self.fn
        if len(index) != fn.n_index:
            raise TypeError(
                f"function @{fn.name} takes {fn.n_index} index value(s), {len(index)} were given"
            )
        if self.prologue is not None:
            hoisted = self.prologue.run((0,))
            self.prologue = None
            for k, v in enumerate(hoisted, start=len(self.capture_values) - len(hoisted)):
                self.capture_values[k] = np.array([v], dtype=v.dtype)
        env: dict[Value, Any] = {}
        for p, i in zip(fn.index_params, index, strict=True):
            env[p] = np.int64(i)
        for p, c in zip(fn.capture_params, self.capture_values, strict=True):
            env[p] = c
        block: Block = fn.entry
        steps = 0
        try:
            while True:
                steps += len(block.ops) + 1
                if steps > self.max_steps:
                    raise StepLimitExceeded(
                        f"@{fn.name} at index {tuple(index)} ran more than {self.max_steps} "
                        "steps (an endless loop?); raise max_steps if the work is real"
                    )
                for op in block.ops:
                    env[op.result] = self._op(op, env)
                term = block.terminator
                if isinstance(term, Return):
                    return tuple(env[v] for v in term.values)
                if isinstance(term, Jump):
                    block, args = term.target, term.args
                elif isinstance(term, Branch):
                    if env[term.cond]:
                        block, args = term.then_target, term.then_args
                    else:
                        block, args = term.else_target, term.else_args
                else:
                    raise InterpreterError(f"@{fn.name}: a block has no terminator")
                # Block arguments are bound in parallel (read all, then write).
                values = [env[a] for a in args]
                if len(values) != len(block.args):
                    raise InterpreterError(
                        f"@{fn.name}: branch passes {len(values)} argument(s) to a block "
                        f"with {len(block.args)}"
                    )
                for param, v in zip(block.args, values, strict=True):
                    env[param] = v
        except KeyError as exc:
            # Unverified IR: a use not dominated by its definition, or a missing attribute.
            raise InterpreterError(
                f"@{fn.name}: missing value or attribute {exc.args[0]!r} (run the verifier)"
            ) from None

    def _load(self, op: Op, arr: Any, idx: tuple[int, ...]) -> Any:
        for i, n in zip(idx, arr.shape, strict=False):
            if not 0 <= i < n:
                name = self.array_names.get(op.operands[0], "?")
                raise IndexError(
                    f"index {idx} is out of bounds for array {name!r} of shape {arr.shape}"
                    + (f" (at {op.span})" if op.span is not None else "")
                )
        return arr[idx]

    def _local(self, op: Op, env: dict[Value, Any]) -> Any:
        """The local-array ops: a fresh array per ``LOCAL``; loads and stores in bounds."""
        t = op.result.type
        if op.opcode is Opcode.LOCAL:
            assert isinstance(t, LocalType)
            # Undefined contents: zeros here (a backend's np.empty may hold anything).
            return np.zeros(t.shape, dtype=t.elem.dtype)
        arr = env[op.operands[0]]
        if op.opcode is Opcode.LOCAL_FILL:
            arr[...] = env[op.operands[1]]
            return np.bool_(True)
        rank = arr.ndim
        idx = tuple(int(env[v]) for v in op.operands[1 : 1 + rank])
        for i, n in zip(idx, arr.shape, strict=True):
            if not 0 <= i < n:
                raise IndexError(
                    f"index {idx} is out of bounds for a local array of shape {arr.shape}"
                    + (f" (at {op.span})" if op.span is not None else "")
                )
        if op.opcode is Opcode.LOCAL_LOAD:
            return arr[idx]
        arr[idx] = env[op.operands[-1]]
        return np.bool_(True)

    def _op(self, op: Op, env: dict[Value, Any]) -> Any:
        opcode = op.opcode
        if opcode is Opcode.LOAD:
            idx = tuple(int(env[v]) for v in op.operands[1:])
            return self._load(op, env[op.operands[0]], idx)
        if opcode in TILE_OPS:
            return eval_tile_op(op, env, self._load)
        if opcode is Opcode.SHAPE:
            return np.int64(env[op.operands[0]].shape[op.attrs["axis"]])
        if opcode in LOCAL_OPS:
            return self._local(op, env)
        result_type = op.result.type
        assert isinstance(result_type, ScalarType)
        return eval_op_unchecked(opcode, op.attrs, [env[v] for v in op.operands], result_type)


def evaluate(
    fn: Function,
    index: Sequence[int],
    captures: Sequence[object],
    max_steps: int = DEFAULT_MAX_STEPS,
) -> tuple[np.generic, ...]:
    """Run ``fn`` at ``index`` with ``captures`` (arrays for array parameters, scalars
    convertible to the parameter type otherwise); one NumPy scalar per result.

    Raises ``IndexError`` naming the index for an out-of-bounds ``LOAD`` and
    ``StepLimitExceeded`` after ``max_steps`` executed ops and terminators.
    """
    machine = _Machine(fn, captures, max_steps)
    with np.errstate(all="ignore"):
        return machine.run(index)


def compute(
    fn: Function,
    shape: tuple[int, ...],
    captures: Sequence[object],
    max_steps: int = DEFAULT_MAX_STEPS,
) -> tuple[np.ndarray[Any, Any], ...]:
    """Run ``fn`` at every index of ``shape`` (row-major); one array of shape ``shape``
    and dtype ``fn.result_types[k]`` per result. Empty shapes give empty arrays; rank 0
    evaluates once."""
    shape = tuple(int(n) for n in shape)
    if len(shape) != fn.n_index:
        raise TypeError(f"function @{fn.name} has rank {fn.n_index}, shape {shape} has not")
    machine = _Machine(fn, captures, max_steps)
    outs = tuple(np.empty(shape, dtype=t.dtype) for t in fn.result_types)
    with np.errstate(all="ignore"):
        for index in itertools.product(*(range(n) for n in shape)):
            values = machine.run(index)
            for out, v in zip(outs, values, strict=True):
                out[index] = v
    return outs
