"""The emitted body compiles inside a numba.cuda kernel over raw pointers (no GPU needed)."""

from __future__ import annotations

import ast
import math
from typing import Any

import numpy as np
import pytest

from offload.emit import HEADER, emit_body, print_source
from offload.ir import Builder, Opcode
from offload.ir.core import Function
from offload.ir.types import F32, I32, I64, ArrayType
from tests.emit.irfuncs import PointerHooks, running_sum

pytestmark = pytest.mark.ptx

cuda = pytest.importorskip("numba.cuda")


def _kernel_source(fn: Function) -> str:
    hooks = PointerHooks(fn)
    params = ["out0", "p0", "st0x0", "st0x1", "ext0x0", "ext0x1", "i0", "i1"]
    args = ast.arguments([], [ast.arg(p) for p in params], None, [], [], None, [])
    body = emit_body(fn, hooks)
    return HEADER + print_source(
        [ast.FunctionDef(name="kernel", args=args, body=body, decorator_list=[], lineno=0)]
    )


def _compile_ptx(fn: Function) -> str:
    from numba import types

    namespace: dict[str, Any] = {"np": np, "math": math}
    exec(compile(_kernel_source(fn), "<ptx-test>", "exec"), namespace)
    f32p = types.CPointer(types.float32)
    sig = (f32p, f32p, *([types.int64] * 6))
    ptx, _ = cuda.compile_ptx(namespace["kernel"], sig, cc=(8, 0))
    return str(ptx)


def _int_and_math_ops() -> Function:
    """A loop with the emitter's guarded int ops and the portable math (rint, floor) in it."""
    fn = running_sum()
    b = Builder("unused", 0)
    done = fn.blocks[-1]
    b.function = fn
    b.position_at_end(done)
    ret = done.terminator
    assert ret is not None
    x = done.ops[-1].result
    i, j = fn.params[0], fn.params[1]
    q = b.binary(Opcode.FLOORMOD, b.cast(i, I32), b.cast(j, I32))
    p = b.binary(Opcode.POW, b.binary(Opcode.SHR, i, j), b.const(3, I64))
    r = b.math("rint", [b.binary(Opcode.ADD, x, b.cast(q, F32))])
    s = b.binary(Opcode.ADD, b.math("floor", [r]), b.cast(p, F32))
    b.ret([s])
    return fn


def test_emitted_multi_block_body_compiles_to_ptx_with_pointer_hooks() -> None:
    ptx = _compile_ptx(_int_and_math_ops())
    assert ".visible .entry" in ptx
    assert "ld.f32" in ptx or "ld.global.f32" in ptx  # the pointer loads
    assert "st.f32" in ptx or "st.global.f32" in ptx  # the result store
    # every float op stays single precision: no f64 arithmetic sneaks in
    assert "add.f64" not in ptx and "cvt.f64.f32" not in ptx


def test_capture_array_type_is_not_needed_by_pointer_hooks() -> None:
    # the pointer hooks never name the array parameter itself
    fn = running_sum()
    assert isinstance(fn.captures[0].type, ArrayType)
    assert "c0" not in _kernel_source(fn)
