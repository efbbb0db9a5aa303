"""The canonical text form of the IR: deterministic, and parsed back by ``parser.py``.

::

    func @f(index %i.0: i64, capture "a" %a.1: array<f32,1>) -> (f32) {
    ^entry.0:
      %x.2 = load %a.1, %i.0 : f32
      %3 = const 0.5 : f32
      %4 = mul %x.2, %3 : f32
      return %4
    }

Values are numbered in definition order (block arguments, then op results, block by
block); a hint becomes a prefix ``%hint.N``. Blocks are ``^hint.N`` or ``^bbN``.
"""

from __future__ import annotations

import math
from typing import Any

from offload.ir.core import Block, Branch, Function, Jump, Op, Return, Value
from offload.ir.ops import Opcode


def format_constant(value: Any) -> str:
    """A constant's text: ``True``, ``-3``, ``1.5``, ``nan``, ``inf``, ``-inf``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        text = repr(value)
        return text if any(c in text for c in ".en") else text + ".0"
    return str(value)


class Namer:
    def __init__(self, fn: Function) -> None:
        self.values: dict[Value, str] = {}
        self.blocks: dict[Block, str] = {}
        n = 0
        for k, block in enumerate(fn.blocks):
            self.blocks[block] = f"^{block.hint}.{k}" if block.hint else f"^bb{k}"
            for v in block.args:
                self.values[v] = self._name(v, n)
                n += 1
            for op in block.ops:
                self.values[op.result] = self._name(op.result, n)
                n += 1

    @staticmethod
    def _name(v: Value, n: int) -> str:
        return f"%{v.hint}.{n}" if v.hint else f"%{n}"

    def v(self, value: Value) -> str:
        # An undefined value (a verifier error) still prints, so that dumps never crash.
        return self.values.get(value, f"%<undefined {value.hint or ''}@{id(value):x}>")

    def vs(self, values: list[Value]) -> str:
        return ", ".join(self.v(x) for x in values)

    def target(self, block: Block, args: list[Value]) -> str:
        name = self.blocks.get(block, "^<unknown>")
        return f"{name}({self.vs(args)})" if args else name


def print_op(op: Op, names: Namer, with_locs: bool = False) -> str:
    res = names.v(op.result)
    if op.opcode is Opcode.CONST:
        body = f"const {format_constant(op.attrs['value'])}"
    else:
        body = str(op.opcode)
        if op.operands:
            body += " " + names.vs(op.operands)
        if op.attrs:
            items = ", ".join(f"{k} = {_attr(v)}" for k, v in sorted(op.attrs.items()))
            body += " {" + items + "}"
    line = f"{res} = {body} : {op.result.type}"
    if with_locs and op.span is not None:
        line += f"  # {op.span}"
    return line


def _attr(value: Any) -> str:
    if isinstance(value, str):
        return value
    return format_constant(value)


def print_function(fn: Function, with_locs: bool = False) -> str:
    """The canonical text of ``fn`` (``with_locs`` adds ``# file:line:col`` comments).

    A function with a prologue (``Function.prologue``) prints it first: two ``func``s."""
    if fn.prologue is not None:
        return print_function(fn.prologue, with_locs) + "\n" + _print_one(fn, with_locs)
    return _print_one(fn, with_locs)


def _print_one(fn: Function, with_locs: bool) -> str:
    names = Namer(fn)
    params: list[str] = []
    for k, v in enumerate(fn.params):
        if k < fn.n_index:
            params.append(f"index {names.v(v)}: {v.type}")
        else:
            cap = fn.captures[k - fn.n_index]
            name = cap.name.replace("\\", "\\\\").replace('"', '\\"')
            const = ""
            if cap.value is not None:
                dims = "x".join(map(str, cap.value.shape))
                const = f' = const({dims}) "{cap.value.data.hex()}"'
            params.append(f'capture "{name}" {names.v(v)}: {v.type}{const}')
    results = ", ".join(str(t) for t in fn.result_types)
    blocking = f" blocking({', '.join(map(str, fn.blocking))})" if fn.blocking else ""
    lines = [f"func @{fn.name}({', '.join(params)}) -> ({results}){blocking} {{"]
    for k, block in enumerate(fn.blocks):
        label = names.blocks[block]
        if k > 0 and block.args:
            args = ", ".join(f"{names.v(a)}: {a.type}" for a in block.args)
            label += f"({args})"
        lines.append(label + ":")
        for op in block.ops:
            lines.append("  " + print_op(op, names, with_locs))
        lines.append("  " + _print_terminator(block, names))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _print_terminator(block: Block, names: Namer) -> str:
    t = block.terminator
    if isinstance(t, Jump):
        return f"br {names.target(t.target, t.args)}"
    if isinstance(t, Branch):
        return (
            f"condbr {names.v(t.cond)}, {names.target(t.then_target, t.then_args)}, "
            f"{names.target(t.else_target, t.else_args)}{' uniform' if t.uniform else ''}"
        )
    if isinstance(t, Return):
        return f"return {names.vs(t.values)}".rstrip()
    return "<no terminator>"
