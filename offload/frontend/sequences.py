"""What a ``for`` loop iterates (``Sequence_``), and the loop over a tuple display.

``for a, b in ((1, 2), (4, 5))`` (a sorting network's pairs) or ``for w in (0.25, 0.5)``
is a counted loop whose item ``k`` is picked by a chain of selects per number (one joined
type per position), so the tuple never exists in memory.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from offload.diagnostics import TypeMismatch
from offload.frontend.arith import Arith
from offload.frontend.core import LoweringCore
from offload.frontend.promote import join
from offload.frontend.values import Scalar, TupleVal, Val
from offload.frontend.views import Views
from offload.ir.ops import Opcode
from offload.ir.types import I64


@dataclass(frozen=True)
class Sequence_:
    """What a for loop iterates: a length and the item at a position in [0, length)."""

    length: Scalar
    item: Callable[[Scalar], Val]


def tuple_sequence(core: LoweringCore, arith: Arith, t: TupleVal, it: ast.expr) -> Sequence_:
    """The items of a tuple of numbers, or of tuples of one length, as a sequence."""
    return Sequence_(Views(core, arith).i64(len(t.items)), _picker(core, arith, list(t.items), it))


def _picker(
    core: LoweringCore, arith: Arith, items: list[Val], it: ast.expr
) -> Callable[[Scalar], Val]:
    """``k -> items[k]`` for items that are all numbers or all tuples of one length."""
    if items and all(isinstance(x, TupleVal) for x in items):
        widths = {len(x.items) for x in items if isinstance(x, TupleVal)}
        if len(widths) != 1:
            raise core.error(
                TypeMismatch,
                "a for loop over a tuple of tuples of different lengths",
                it,
                hint="iterate over tuples of one length, such as ((1, 2), (4, 5))",
            )
        parts = [
            _picker(core, arith, [x.items[c] for x in items if isinstance(x, TupleVal)], it)
            for c in range(widths.pop())
        ]
        return lambda k: TupleVal(tuple(part(k) for part in parts))
    scalars = [core.scalar(x, it, "an item of a tuple iterated by a for loop") for x in items]
    key = join(*((s.type, s.weak) for s in scalars)) if scalars else (I64, True)
    if key is None:
        raise core.error(
            TypeMismatch,
            "a for loop over a tuple needs items of types that combine",
            it,
            hint="iterate over a tuple of numbers of one kind",
        )
    core.at(it)
    conv = [core.convert(s, key[0], key[1]) for s in scalars]
    v = Views(core, arith)

    def item(k: Scalar) -> Val:
        if not conv:  # an empty tuple: the body never runs
            return v.i64(0)
        picked = conv[-1]
        for j in range(len(conv) - 2, -1, -1):
            here = arith.compare(Opcode.EQ, k, v.i64(j), it)
            picked = v.select(here, conv[j], picked)
            picked = Scalar(picked.value, key[1])
        return picked

    return item
