"""Integer division by a constant is emitted without branches (``offload.emit.division``,
issue 19 item 5) and means exactly the IR's ``//``, ``%``, ``div``, ``rem``: checked
exhaustively over int8 (every dividend, every constant divisor) and at the edges of the
wider types by running the emitted statements on NumPy arrays (the same wrapping uint64
arithmetic numba compiles), and end to end on ``compute_s``."""

from __future__ import annotations

import ast
import itertools
import os
from typing import Any

import numpy as np
import pytest

from offload.emit.division import Temps, constant_division, nonneg_constant_division
from offload.emit.template import name
from offload.ir.ops import Opcode
from offload.ir.semantics import eval_op
from offload.ir.types import ScalarType, scalar_by_name

OPS = (Opcode.FLOORDIV, Opcode.FLOORMOD, Opcode.DIV, Opcode.REM)


def _edges(bits: int) -> list[int]:
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    near = [lo, lo + 1, lo + 2, hi - 1, hi, lo // 2, hi // 2, lo // 3, hi // 3]
    return sorted({*near, *range(-9, 10)})


def _run_emitted(stmts: list[ast.stmt], a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    module = ast.fix_missing_locations(ast.Module(stmts, []))
    ns: dict[str, Any] = {"np": np, "a": a}
    with np.errstate(all="ignore"):
        exec(compile(module, "<division>", "exec"), ns)
    return np.broadcast_to(ns["r"], a.shape)  # a zero divisor gives one constant


def _expected(code: Opcode, a: np.ndarray[Any, Any], c: int, t: ScalarType) -> list[int]:
    k = t.dtype.type(c)
    return [int(eval_op(code, {}, [x, k], t)) for x in a]


def _check(code: Opcode, t: ScalarType, dividends: list[int], divisors: list[int]) -> None:
    a = np.array(dividends, dtype=t.dtype)
    for c in divisors:
        got = _run_emitted(constant_division(code, name("a"), c, t, out="r", tmp=Temps("r")), a)
        assert got.dtype == t.dtype, (code, c, got.dtype)
        want = _expected(code, a, c, t)
        bad = [(int(x), int(g), w) for x, g, w in zip(a, got, want, strict=True) if g != w]
        assert not bad, f"{code} by {c} ({t}): (a, got, want) {bad[:5]}"


@pytest.mark.unit
@pytest.mark.parametrize("code", OPS, ids=lambda c: c.name.lower())
def test_division_by_every_int8_constant_is_exact_for_every_int8_dividend(code: Opcode) -> None:
    _check(code, scalar_by_name("i8"), list(range(-128, 128)), list(range(-128, 128)))


@pytest.mark.unit
@pytest.mark.parametrize(
    ("code", "t"),
    list(itertools.product(OPS, ("i16", "i32", "i64", "u8", "u64"))),
    ids=lambda x: x.name.lower() if isinstance(x, Opcode) else x,
)
def test_division_by_a_constant_is_exact_at_the_edges_of_each_width(code: Opcode, t: str) -> None:
    st = scalar_by_name(t)
    if st.is_signed:
        values = _edges(st.bits)
    else:
        values = sorted({*range(10), 2**st.bits - 1, 2**st.bits - 2, 2 ** (st.bits - 1)})
    _check(code, st, values, [v for v in values if v != 0] + [0])


@pytest.mark.unit
@pytest.mark.parametrize("code", (Opcode.DIV, Opcode.REM), ids=lambda c: c.name.lower())
def test_nonneg_division_by_a_constant_is_unsigned_and_exact(code: Opcode) -> None:
    t = scalar_by_name("i64")
    a = np.array([0, 1, 6, 7, 8, 2**62, 2**63 - 1], dtype=np.int64)
    for c in (0, 1, 3, 7, 2**40 + 1, 2**63 - 1):
        got = _run_emitted(nonneg_constant_division(code, name("a"), c, t, out="r"), a)
        assert list(got) == _expected(code, a, c, t), (code, c)


@pytest.mark.unit
def test_signed_division_by_a_constant_has_no_branch_or_select() -> None:
    for code, c in itertools.product(OPS, (7, -7, 1, -1, -(2**63))):
        stmts = constant_division(code, name("a"), c, scalar_by_name("i64"), out="r",
                                  tmp=Temps("r"))  # fmt: skip
        src = ast.unparse(ast.Module(stmts, []))
        assert " if " not in src and "np.int64(a) //" not in src, src


I64_EDGES = np.array(_edges(64), dtype=np.int64)
I8_ALL = np.arange(-128, 128, dtype=np.int8)


def _int64_divisions(i: int) -> tuple[Any, ...]:
    x = I64_EDGES[i]
    return (x // 7, x % 7, x // -7, x % -7, x // -1, x % -1, x // -9223372036854775808,
            x % 9223372036854775807)  # fmt: skip


def _int8_divisions(i: int) -> tuple[Any, ...]:
    x = I8_ALL[i]
    return (x // np.int8(3), x % np.int8(3), x // np.int8(-128), x % np.int8(-3),
            x // np.int8(-1), x % np.int8(127))  # fmt: skip


def _agrees_with_numpy(compute: Any, fn: Any, n: int) -> None:
    got = compute((n,), fn)
    with np.errstate(all="ignore"):
        want = [np.array(col) for col in zip(*(fn(i) for i in range(n)), strict=True)]
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w.dtype and (g == w).all(), (k, g, w)


CASES = [(_int64_divisions, len(I64_EDGES)), (_int8_divisions, 256)]


@pytest.mark.cpu
@pytest.mark.parametrize(("fn", "n"), CASES, ids=["i64", "i8"])
@pytest.mark.parametrize("target", ["compute_s", "compute_p"])
def test_cpu_targets_divide_by_constants_like_numpy(fn: Any, n: int, target: str) -> None:
    import offload as ol

    _agrees_with_numpy(getattr(ol, target), fn, n)


def _simulator_on() -> bool:
    import numba

    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and bool(numba.config.ENABLE_CUDASIM)


@pytest.mark.sim
@pytest.mark.skipif(
    not _simulator_on(),
    reason="sim lane: NUMBA_ENABLE_CUDASIM=1 python -m pytest -m sim tests/emit",
)
@pytest.mark.parametrize(("fn", "n"), CASES, ids=["i64", "i8"])
def test_simulator_divides_by_constants_like_numpy(fn: Any, n: int) -> None:
    import offload as ol

    _agrees_with_numpy(ol.compute_g, fn, n)
