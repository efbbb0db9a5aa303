"""Which constant captures a GPU kernel reads from the constant bank (used by offload.ptx).

A capture the kernel is specialised on (``Capture.value``, see ``offload.driver``) keeps its
contents in the kernel (``offload.ptx.kernel_source``) only where every read of it is at an
index that is the same in every thread (``offload.analysis.uniform``): the constant cache
serves a warp in one access when its threads read one address, and serialises them when
they do not, so an array read at thread-dependent indices (a lookup table) is read through
its pointer as any other. A uniform read at a constant offset -- a filter weight in a loop
that NVVM unrolls -- then folds to an immediate.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from offload.analysis.uniform import NONE, thread_dependence
from offload.ir.core import Capture, Function
from offload.ir.ops import Opcode
from offload.opt.base import FunctionPass


def bank_constants(fn: Function) -> Function:
    """``fn`` with ``Capture.value`` cleared on every capture that is not read, or is read
    at a thread-dependent index (or by a staged read) somewhere."""
    pinned = {v: k for k, (v, c) in enumerate(zip(fn.capture_params, fn.captures, strict=True))
              if c.value is not None}  # fmt: skip
    if not pinned:
        return fn
    deps = thread_dependence(fn)
    read: set[int] = set()
    keep = set(pinned.values())
    for op in fn.ops():
        for v in op.operands:
            k = pinned.get(v)
            if k is None or op.opcode is Opcode.SHAPE:
                continue
            if op.opcode is Opcode.LOAD and all(deps[i] == NONE for i in op.operands[1:]):
                read.add(k)
            else:
                keep.discard(k)
    keep &= read
    if keep == set(pinned.values()):
        return fn
    caps = [c if c.value is None or k in keep else Capture(c.name, c.type)
            for k, c in enumerate(fn.captures)]  # fmt: skip
    return dataclasses.replace(fn, captures=caps)


@dataclass(frozen=True)
class ConstBank(FunctionPass):
    """Keep a specialised capture's contents in the kernel only where every read of it is
    thread-uniform (``bank_constants``)."""

    name = "const_bank"

    def rewrite(self, fn: Function) -> Function:
        return bank_constants(fn)
