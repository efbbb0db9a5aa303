"""Give a function the result types a caller asked for (``dtype=``, ``out=``)."""

from __future__ import annotations

from collections.abc import Sequence

from offload.ir.clone import clone_function
from offload.ir.core import Function, Op, Return, Value
from offload.ir.ops import Opcode
from offload.ir.types import ScalarType


def cast_results(fn: Function, types: Sequence[ScalarType]) -> Function:
    """A copy of ``fn`` whose results are cast to ``types`` (``fn`` is not modified)."""
    if len(types) != len(fn.result_types):
        raise ValueError(f"{len(types)} result types for {len(fn.result_types)} results")
    if list(types) == fn.result_types:
        return fn
    copy = clone_function(fn)
    for block in copy.blocks:
        term = block.terminator
        if not isinstance(term, Return):
            continue
        values: list[Value] = []
        for value, want in zip(term.values, types, strict=True):
            if value.type == want:
                values.append(value)
                continue
            cast = Value(want, value.hint)
            block.ops.append(Op(Opcode.CAST, [value], cast, {}, term.span))
            values.append(cast)
        block.terminator = Return(values, term.span)
    copy.result_types = list(types)
    return copy
